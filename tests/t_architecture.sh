#!/usr/bin/env bash
# t_architecture.sh: docs/architecture.md's layers are the sources' (tests/layers.py): a module
# uses only modules of lower layers or listed before it in its own, MPI only in dist.c, GDAL only
# in the modules marked (G), src/'s private headers only in their own module. It found train.c
# using run.c (a layer above) for the end-of-run map's configuration, stop.c and dist.c using
# each other, rundir.c and report.c, augment.c using raster.c from a layer below it, and
# predict.c calling GDAL's cache functions itself beside raster.c's.
. "$(dirname "$0")/lib.sh"

out=$($PY "$ROOT/tests/layers.py" "$ROOT" 2>&1)
s=$?
[ $s -eq 0 ] && ok "the sources keep docs/architecture.md's layers ($(echo "$out" | tail -1))" \
    || notok "the sources keep docs/architecture.md's layers" "$(echo "$out" | tr '\n' ';')"

# the check itself can fail: a copy whose lowest module uses the highest, and whose predict.c
# calls GDAL, is refused with both named
mkdir -p "$T/tree"
cp -r "$ROOT/docs" "$ROOT/src" "$ROOT/include" "$T/tree/"
sed -i '0,/#include "wildcpu\/util.h"/s//#include "wildcpu\/util.h"\n#include "wildcpu\/run.h"/' "$T/tree/src/util.c"
sed -i '0,/#include <math.h>/s//#include <math.h>\n#include <gdal.h>/' "$T/tree/src/predict.c"
out=$($PY "$ROOT/tests/layers.py" "$T/tree" 2>&1)
s=$?
[ $s -eq 1 ] && grep -q 'src/util.c (layer 0) uses run (layer 6)' <<<"$out" &&
    grep -q 'src/predict.c includes GDAL' <<<"$out" \
    && ok "an upward use and GDAL outside a (G) module are named" \
    || notok "an upward use and GDAL outside a (G) module are named" "status $s: $(echo "$out" | tr '\n' ';')"

# a header is its module's file, and a name is a use whatever header brought it: riskmap.h
# including predict.h (a layer above) and predict.c using train's configuration through
# rundir.h passed when only src/*.c's #include lines were read (d6a81d2); and the list of uses
# the document allows stays true (a listed use that no file makes is refused)
mkdir -p "$T/tree2"
cp -r "$ROOT/docs" "$ROOT/src" "$ROOT/include" "$T/tree2/"
sed -i 's/^#define WILDCPU_JSON_H$/&\n#include "wildcpu\/model.h"/' "$T/tree2/include/wildcpu/json.h"
printf '\n/* a name of train, through rundir.h */\nvoid wc_util_probe(const wc_train_config *cfg);\n' >>"$T/tree2/src/util.c"
sed -i 's/^- `netplan` uses `net`:/- `netplan` uses `train`:/' "$T/tree2/docs/architecture.md"
out=$($PY "$ROOT/tests/layers.py" "$T/tree2" 2>&1)
s=$?
[ $s -eq 1 ] && grep -q 'include/wildcpu/json.h (layer 1) uses model (layer 3)' <<<"$out" &&
    grep -q 'src/util.c (layer 0) uses train (layer 5)' <<<"$out" &&
    grep -q 'lets netplan use train against the layers, but no file of netplan does' <<<"$out" &&
    grep -q 'netplan.c (layer 2) uses net (layer 2, listed after it)' <<<"$out" \
    && ok "a header's include, a name used without its header, and a stale allowed use are named" \
    || notok "a header's include, a name used without its header, and a stale allowed use are named" "status $s: $(echo "$out" | tr '\n' ';')"

finish
