# tests/lib.sh: what the shell tests share. Source it; it sets:
#   $WILDCPU  the program under test        $ROOT  the repository       $T  a scratch dir (removed)
#   ok NAME / notok NAME [why]: one result line each, as tests/run counts them
#   check NAME CMD...: runs CMD, ok if it exits 0
#   mpirun_n N ARGS...: Open MPI's mpirun, as root, oversubscribed
#   json FILE KEY: a top-level number or string of a flat JSON file
#   digest CKPT: the parameter digest `wildcpu info` prints
set -u
ROOT=${WILDCPU_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
WILDCPU=${WILDCPU:-$ROOT/build/wildcpu}
T=$(mktemp -d "${TMPDIR:-/tmp}/wildcpu-test.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
# Open MPI's shared-memory transport wants a writable session directory; keep tests apart.
export OMPI_MCA_orte_tmpdir_base=$T
SAMPLE=$ROOT/data/sample/tiles.vrt
# Debian's python3 (with GDAL's osgeo bindings), not a python from elsewhere on the PATH
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
failures=0

ok() { echo "ok - $1"; }
notok() {
    echo "not ok - $1"
    [ $# -gt 1 ] && echo "#   $2"
    failures=$((failures + 1))
}
check() {
    local name=$1
    shift
    if "$@"; then ok "$name"; else notok "$name" "command failed: $*"; fi
}
mpirun_n() {
    local n=$1
    shift
    mpirun --oversubscribe --bind-to none -np "$n" "$@"
}
json() {
    $PY -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(v)' "$1" "$2"
}
digest() { "$WILDCPU" info "$1" | awk '$1 == "digest" {print $2}'; }
# The train losses of a metrics.jsonl, one per line, exactly as logged.
losses() { $PY -c 'import json,sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d["type"] == "train": print(d["step"], repr(d["loss"]))' "$1"; }
finish() { exit $((failures > 0)); }
