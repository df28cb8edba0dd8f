#!/usr/bin/env python3
"""tests/layers.py: docs/architecture.md's layers against the sources' #include lines.

Prints one line per rule broken and exits 1 when any is; 0 when the sources keep:
  - every src/*.c is a module of the layer table, or a file of a module cut into several
    (the paragraph "cut into several files" names them, module first in each parenthesis);
  - a module includes the header of another module only when that one is in a lower layer,
    or listed before it in the same layer (the files of one module may use one another);
  - MPI (<mpi.h>) only in dist.c, GDAL's headers only in the modules marked (G);
  - a private header of src/ only in the files of its own module.
The headers are their module's files too: include/wildcpu/NAME.h is module NAME's (or, for a
file of a module cut into several, that module's), src/NAME.h its owner's, so a header that
includes another module's header uses that module as a source file would (only src/*.c were
read before, and riskmap.h including predict.h, a layer above, passed). The uses the document
lists as exceptions ("- `A` uses `B`: why" under "Uses against the layers") are allowed, and
one it lists that no file makes is refused, so that the list stays true. #include lines in
comments are none.
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

# the uses the document allows against the layers: its "- `A` uses `B`" lines of that paragraph
allowed, made = set(), set()
section = re.search(r"^Uses against the layers(.*?)(?:\n\n(?!- )|\Z)", arch, re.S | re.M)
if section:
    allowed = set(re.findall(r"^- `(\w+)` uses `(\w+)`", section.group(1), re.M))

INCLUDE = r"^\s*#\s*include\s*"


def code(path):
    """A file's text without its comments and string literals (an #include or a name there is
    none)."""
    text = open(path, encoding="utf-8").read()
    text = re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"',
                  lambda m: m.group(0) if m.group(0).startswith('"') else " ", text, flags=re.S)
    return "\n".join(line if re.match(r"\s*#\s*include", line) else
                     re.sub(r'"(?:\\.|[^"\\])*"', '""', line) for line in text.split("\n"))


# the names each public header declares (its types, functions, macros, constants): a file that
# uses one uses that module, whatever header brought it (predict.c had train's configuration
# through rundir.h, and no #include of train.h)
declared = {}
for path in glob.glob(os.path.join(root, "include/wildcpu/*.h")):
    stem = os.path.basename(path)[:-2]
    text = code(path)
    names = set(re.findall(r"^\s*#\s*define\s+(WC_\w+)", text, re.M))
    names |= set(re.findall(r"(?<!struct )\b(wc_\w+)\s*;", text))  # typedefs, constants (not
    # `struct wc_x;`, which declares another module's type without using it)
    names |= set(re.findall(r"^[\w ]*?\**\b(wc_\w+)\s*\(", text, re.M))  # function declarations
    names |= set(re.findall(r"^\s*(WC_\w+)\s*[,=]", text, re.M))  # enumerators
    names |= set(re.findall(r"\b(WC_\w+)\[", text))  # extern arrays
    names |= set(re.findall(r"\(\s*\*\s*(wc_\w+)\s*\)\s*\(", text))  # function pointer types
    for n in names:  # a name two headers declare (a typedef repeated) is its namesake's
        if n not in declared or n.lower().startswith("wc_" + stem + "_") or n.lower() == "wc_" + stem:
            declared[n] = owner.get(stem, stem)
broken = []
sources = sorted(glob.glob(os.path.join(root, "src/*.c")))
if not sources:
    sys.exit("no src/*.c under " + root)
headers = sorted(glob.glob(os.path.join(root, "src/*.h")) +
                 glob.glob(os.path.join(root, "include/wildcpu/*.h")))
for path in sources + headers:
    name = os.path.relpath(path, root)
    stem = os.path.basename(path)[:-2]
    private = name.startswith("src/") and name.endswith(".h")
    mod = owner.get(stem) if private else owner.get(stem, stem)
    if mod not in rank:
        broken.append(f"{name}: in no layer of docs/architecture.md"
                      + (" (a private header no module owns)" if private else ""))
        continue
    text = code(path)
    uses = set(owner.get(inc, inc) for inc in re.findall(INCLUDE + r'"wildcpu/(\w+)\.h"', text, re.M))
    uses |= set(declared[n] for n in re.findall(r"\b(?:wc|WC)_\w+", text) if n in declared)
    for used in sorted(uses):
        if used == mod:
            continue
        if used not in rank:
            broken.append(f"{name} uses {used}, which is in no layer")
        elif rank[used] >= rank[mod] and (mod, used) in allowed:
            made.add((mod, used))
        elif rank[used] >= rank[mod]:
            broken.append(f"{name} (layer {rank[mod][0]}) uses {used} (layer "
                          f"{rank[used][0]}{', listed after it' if rank[used][0] == rank[mod][0] else ''})")
    for inc in re.findall(INCLUDE + r'"(\w+)\.h"', text, re.M):
        if owner.get(inc) != mod:
            broken.append(f"{name} includes src/{inc}.h, a private header of another module")
    if re.search(INCLUDE + r"<mpi\.h>", text, re.M) and stem != "dist":
        broken.append(f"{name} includes <mpi.h>: MPI is only in dist.c")
    if re.search(INCLUDE + r'[<"](gdal|cpl_|ogr)\w*\.h[>"]', text, re.M) and mod not in gdal:
        broken.append(f"{name} includes GDAL, but {mod} is not marked (G)")
for a, b in sorted(allowed - made):
    broken.append(f"docs/architecture.md lets {a} use {b} against the layers, but no file of {a} "
                  "does: strike it from the list")

for b in broken:
    print(b)
print(f"{len(sources) + len(headers)} files, {len(rank)} modules in "
      f"{len(set(r[0] for r in rank.values()))} layers: {len(broken)} broken")
sys.exit(1 if broken else 0)
