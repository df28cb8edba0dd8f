#!/usr/bin/env python3
"""tests/layers.py: docs/architecture.md's layers against the sources' #include lines.

Prints one line per rule broken and exits 1 when any is; 0 when the sources keep:
  - every src/*.c is a module of the layer table, or a file of a module cut into several
    (the paragraph "cut into several files" names them, module first in each parenthesis);
  - a module includes the header of another module only when that one is in a lower layer,
    or listed before it in the same layer (the files of one module may use one another);
  - MPI (<mpi.h>) only in dist.c, GDAL's headers only in the modules marked (G);
  - a private header of src/ only in the files of its own module.
"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
arch = open(os.path.join(root, "docs/architecture.md"), encoding="utf-8").read()

rank, gdal = {}, set()  # module -> (layer, position); modules marked (G)
for m in re.finditer(r"^\| (\d+) \| (.*?) \|", arch, re.M):
    for pos, entry in enumerate(re.findall(r"`(\w+)`( \(G[;)])?", m.group(2))):
        rank[entry[0]] = (int(m.group(1)), pos)
        if entry[1]:
            gdal.add(entry[0])

owner = {}  # a file stem (or private header) -> its module
split = re.search(r"cut into several files(.*?)Nothing\s+else includes", arch, re.S)
if not split:
    sys.exit("docs/architecture.md: no paragraph saying which modules are cut into several files")
for group in re.findall(r"\((.*?)\)(?:, and| and|\.|,)", split.group(1).replace("\n", " "), re.S):
    names = re.findall(r"`(?:src/)?(\w+)\.[ch]`", group)
    if names and names[0] in rank:
        for n in names:
            owner[n] = names[0]

broken = []
sources = sorted(glob.glob(os.path.join(root, "src/*.c")))
if not sources:
    sys.exit("no src/*.c under " + root)
for path in sources:
    stem = os.path.basename(path)[:-2]
    mod = owner.get(stem, stem)
    if mod not in rank:
        broken.append(f"src/{stem}.c: in no layer of docs/architecture.md")
        continue
    text = open(path, encoding="utf-8").read()
    for inc in re.findall(r'#include "wildcpu/(\w+)\.h"', text):
        used = owner.get(inc, inc)
        if used == mod or used not in rank:
            continue
        if rank[used] >= rank[mod]:
            broken.append(f"src/{stem}.c (layer {rank[mod][0]}) uses {used} (layer "
                          f"{rank[used][0]}{', listed after it' if rank[used][0] == rank[mod][0] else ''})")
    for inc in re.findall(r'#include "(\w+)\.h"', text):
        if owner.get(inc) != mod:
            broken.append(f"src/{stem}.c includes src/{inc}.h, a private header of another module")
    if re.search(r"#include <mpi\.h>", text) and stem != "dist":
        broken.append(f"src/{stem}.c includes <mpi.h>: MPI is only in dist.c")
    if re.search(r'#include [<"](gdal|cpl_|ogr)\w*\.h[>"]', text) and mod not in gdal:
        broken.append(f"src/{stem}.c includes GDAL, but {mod} is not marked (G)")

for b in broken:
    print(b)
print(f"{len(sources)} files, {len(rank)} modules in {len(set(r[0] for r in rank.values()))} layers: "
      f"{len(broken)} broken")
sys.exit(1 if broken else 0)
