#!/usr/bin/env bash
# t_cli.sh: docs/cli.md, the command-line reference, stays true to the program.
#
#   - the commands documented are the commands of main.c, each in a section `wildcpu CMD`;
#   - for every command, the options in the first column of that section's tables are exactly the
#     options of main.c's table for the command (names, and whether each takes a value), every
#     long option `wildcpu COMMAND --help` prints (and `wildcpu --help` prints on the command's
#     usage line) is among them, and the program accepts them all (it is run with every
#     documented option and a valid value, then --help: an option it does not know is a usage
#     error; a negative control proves that this check can fail);
#   - the exit statuses of the "Exit status" table are exactly util.h's WC_EXIT_* values, and
#     every status a help text lists is one of them;
#   - the version, every file rundir.c's RUN_FILES names (and --fresh moves), and every environment
#     variable the sources read are documented;
#   - info, --help and --version with a standard output that cannot be written (/dev/full) end
#     with status 1 and a message naming it; into a closed pipe, with SIGPIPE ignored, silently
#     with status 0;
#   - README.md and docs/*.md link only to files (and headings) that exist inside the repository.
# No training runs: it takes a few seconds.
. "$(dirname "$0")/lib.sh"

export ROOT WILDCPU T
"$PY" - <<'EOF'
import os, re, subprocess, sys

root, prog = os.environ["ROOT"], os.environ["WILDCPU"]
failures = 0


def result(good, name, why=""):
    global failures
    print(("ok - " if good else "not ok - ") + name)
    if not good:
        failures += 1
        for line in str(why).strip().splitlines()[:20]:
            print("#   " + line)


def read(rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def sections(md):
    """{title: text} of the '## ' sections (their '### ' subsections included)."""
    out, title = {}, None
    for line in md.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            out[title] = ""
        elif title is not None:
            out[title] += line + "\n"
    return out


def find_section(secs, prefix):
    hits = [t for t in secs if t.startswith(prefix)]
    return secs[hits[0]] if len(hits) == 1 else None


# ---- docs/cli.md ------------------------------------------------------------------------------
doc = read("docs/cli.md")
secs = sections(doc)
OPT_ROW = re.compile(r"^\|\s*`(-{1,2}[A-Za-z][\w-]*)([^`]*)`\s*\|", re.M)
doc_opts = {}  # command -> {option: its argument as documented, "" for a flag}
for title, text in secs.items():
    m = re.match(r"`wildcpu (?:\[(\w+)\]|(\w+)|(--help))`", title)
    if not m:
        continue
    cmd = m.group(1) or m.group(2) or "global"
    doc_opts[cmd] = {o: a.strip() for o, a in OPT_ROW.findall(text)}

# ---- src/main.c -------------------------------------------------------------------------------
main_c = read("src/main.c")
cmd_fn = dict(re.findall(r'\{"(\w+)",\s*(cmd_\w+)\}', main_c))


def body(src, header_re):
    m = re.search(header_re, src)
    if not m:
        return ""
    end = src.find("\n}\n", m.end())
    return src[m.end():end]


def options_of(text):
    """{option: takes a value} from getopt tables and literal argv comparisons."""
    opts = {"--" + n: int(a) > 0 for n, a in re.findall(r'\{"([a-z][\w-]*)",\s*([012]),\s*0,\s*O_\w+\}', text)}
    for lit in re.findall(r'strcmp\(argv\[\d+\],\s*"(-[\w-]*)"\)', text):
        opts.setdefault(lit, False)
    return opts


code_opts = {cmd: options_of(body(main_c, r"static int %s\(int argc, char \*\*argv\) \{" % re.escape(fn)))
             for cmd, fn in cmd_fn.items()}
code_opts["global"] = options_of(body(main_c, r"int main\(int argc, char \*\*argv\) \{"))

result(set(doc_opts) == set(cmd_fn) | {"global"},
       "every command has its section in docs/cli.md, and no other: %s" % ", ".join(sorted(cmd_fn)),
       "main.c: %s; docs/cli.md sections: %s" % (sorted(cmd_fn), sorted(doc_opts)))
for cmd in sorted(code_opts):
    if not code_opts[cmd]:
        result(False, "%s: main.c's options found" % cmd, "the parser of this test found none in main.c")
        continue
    d, c = doc_opts.get(cmd, {}), code_opts[cmd]
    why = ["in main.c, not in docs/cli.md: " + o for o in sorted(set(c) - set(d))]
    why += ["in docs/cli.md, not in main.c: " + o for o in sorted(set(d) - set(c))]
    why += ["%s: main.c %s, docs/cli.md %s" % (o, "takes a value" if c[o] else "is a flag",
                                               "'%s'" % d[o] if d[o] else "a flag")
            for o in sorted(set(c) & set(d)) if c[o] != bool(d[o])]
    result(not why, "%s: docs/cli.md lists main.c's options (%d), with the same values" % (cmd, len(c)),
           "\n".join(why))

# ---- the program: help texts, acceptance, version ----------------------------------------------
SAMPLE = {"N": "64", "K": "64", "STEPS": "64", "PIXELS": "64", "X": "0.5", "F": "0.2", "M": "1", "DEG": "30",
          "NAME": "fire", "PATH": "x", "FILE": "x", "DIR": "x", "REPORT.json": "x"}


def sample_value(arg):
    first = arg.replace("\\|", "|").split("|")[0]
    return first if re.fullmatch(r"[a-z][a-z-]*", first) else SAMPLE.get(first)


runs = {}  # name -> argv; started together (each pays MPI's start-up), collected below
for cmd in sorted(cmd_fn):
    runs["help " + cmd] = [cmd, "--help"]
runs["help"] = ["--help"]
runs["-h"] = ["-h"]
runs["version"] = ["--version"]
runs["negative control"] = ["train", "--no-such-option", "--help"]
# a usage error prints the message, then the usage of the command it was given to
for cmd in sorted(cmd_fn):
    runs["usage error " + cmd] = [cmd, "--no-such-option"] if cmd != "info" else [cmd, "a", "b"]
runs["usage error evaluate --label-band 0"] = ["evaluate", "--tiles", "x", "--checkpoint", "x",
                                               "--label-band", "0"]
runs["usage error default"] = ["--no-such-option"]
runs["usage error info --no-such-option"] = ["info", "--no-such-option"]
runs["usage error info ''"] = ["info", ""]
# "--" ends the options: a directory named "-d" is described (0 checkpoints: status 0)
os.makedirs(os.path.join(os.environ["T"], "-d"), exist_ok=True)
runs["info -- -d"] = ["info", "--", "-d"]
no_sample = []
for cmd in sorted(cmd_fn):
    argv = [cmd]
    for opt, arg in doc_opts.get(cmd, {}).items():
        if opt == "--help":
            continue
        v = sample_value(arg) if arg else None
        if arg and v is None:
            no_sample.append("%s %s %s" % (cmd, opt, arg))
            continue
        argv += [opt] + ([v] if arg else [])
    if len(argv) > 1:
        runs["accept " + cmd] = argv + ["--help"]
if no_sample:
    result(False, "a sample value for every documented argument", "\n".join(no_sample))
# All at once, each with its own Open MPI session directory: singletons starting together under
# one directory race to create it (Open MPI 4.1 takes the loser's "File exists" as fatal).
def own_session(i):
    d = os.path.join(os.environ["T"], "ompi-run-%d" % i)
    os.makedirs(d, exist_ok=True)
    return dict(os.environ, OMPI_MCA_orte_tmpdir_base=d)
procs = {k: subprocess.Popen([prog] + a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=own_session(i), cwd=os.environ["T"])
         for i, (k, a) in enumerate(runs.items())}
out = {}
for k, p in procs.items():
    o, e = p.communicate(timeout=120)
    out[k] = (p.returncode, o, e)

LONG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
helps = {}  # command -> help text
for cmd in sorted(cmd_fn):
    rc, o, e = out["help " + cmd]
    result(rc == 0 and o.strip(), "wildcpu %s --help exits 0 and prints the help" % cmd, "status %d: %s" % (rc, e))
    helps[cmd] = o
rc, o, e = out["help"]
result(rc == 0 and o == out["-h"][1] and out["-h"][0] == 0, "wildcpu --help and -h exit 0 with the same text",
       "status %d / %d: %s" % (rc, out["-h"][0], e))
usage, _, rest = o.partition("\n\n")  # wildcpu --help: the usage lines, then train's help
usage_opts, cur = {}, None
for line in usage.splitlines():
    m = re.match(r"(?:usage:)?\s*wildcpu (\S+)", line)
    if m:
        w = m.group(1)
        cur = "global" if w.startswith("-") else w.strip("[]")
    if cur:
        usage_opts.setdefault(cur, set()).update(LONG.findall(line))
for cmd in sorted(set(helps) | set(usage_opts)):
    shown = set(LONG.findall(helps.get(cmd, "") + (rest if cmd == "train" else ""))) | usage_opts.get(cmd, set())
    missing = sorted(shown - set(doc_opts.get(cmd, {})))
    result(not missing, "%s: every option its help shows (%d) is in docs/cli.md under it" % (cmd, len(shown)),
           "not in the %s section: %s" % (cmd, " ".join(missing)))
for cmd in sorted(cmd_fn):
    k = "accept " + cmd
    if k not in out:
        continue
    rc, o, e = out[k]
    n = len([o for o in doc_opts[cmd] if o != "--help"])
    result(rc == 0 and o == out["help " + cmd][1],
           "%s: the program accepts every option docs/cli.md lists (%d, each with a valid value)" % (cmd, n),
           "wildcpu %s\nstatus %d: %s" % (" ".join(runs[k]), rc, e))
rc, o, e = out["negative control"]
result(rc == 2 and "unknown option --no-such-option" in e,
       "negative control: an option the program does not have is refused (status 2, 'unknown option')",
       "status %d: %s" % (rc, e))
rc, o, e = out["info -- -d"]
result(rc == 0 and o.startswith("-d: 0 checkpoints"), "info -- -d: '--' ends the options, -d is the PATH",
       "status %d: %s%s" % (rc, o, e))
# a standard output that cannot be written (a full disk: /dev/full) loses what info, --help and
# --version print: status 1 and a message, not 0
for argv in (["info", "--", "-d"], ["--version"], ["--help"], ["predict", "--help"]):
    with open("/dev/full", "w") as full:
        p = subprocess.run([prog] + argv, stdout=full, stderr=subprocess.PIPE, text=True,
                           env=own_session(len(runs)), cwd=os.environ["T"], timeout=120)
    result(p.returncode == 1 and "error: standard output: " in p.stderr,
           "wildcpu %s >/dev/full: status 1, 'standard output' named" % " ".join(argv),
           "status %d: %s" % (p.returncode, p.stderr))
# ... but a reader that went away (`| head -1`) is the reader's choice: silent, status 0, also
# when SIGPIPE is ignored (as train, predict and evaluate ignore it, or a parent did) and the
# write that failed was not the last one (--help's 4.5 KiB are written in two: the flush at exit
# has nothing left to write and errno says nothing then)
for argv in (["--help"], ["predict", "--help"]):
    r, w = os.pipe()
    os.close(r)  # closed before the program starts: no race with a reader
    p = subprocess.run([prog] + argv, stdout=w, stderr=subprocess.PIPE, text=True,
                       env=own_session(len(runs)), cwd=os.environ["T"], timeout=120,
                       restore_signals=False)  # Python's SIGPIPE, ignored, is inherited
    os.close(w)
    result(p.returncode == 0 and p.stderr == "",
           "wildcpu %s with SIGPIPE ignored into a closed pipe: status 0, nothing said" % " ".join(argv),
           "status %d: %s" % (p.returncode, p.stderr))
for k in sorted(k for k in runs if k.startswith("usage error ")):
    rc, o, e = out[k]
    cmd = runs[k][0] if runs[k][0] in cmd_fn else "train"
    shown = re.findall(r"^(?:usage:)?\s+wildcpu (\S+)", e, re.M)
    result(rc == 2 and e.startswith("wildcpu: ") and shown and {w.strip("[]") for w in shown} == {cmd},
           "%s: status 2, the message, then %s's usage alone" % (k, cmd),
           "wildcpu %s\nstatus %d: %s" % (" ".join(runs[k]), rc, e))
version = re.search(r'#define WC_VERSION "([^"]+)"', read("include/wildcpu/util.h")).group(1)
rc, o, e = out["version"]
result(rc == 0 and o.strip() == "wildcpu " + version and "`wildcpu %s`" % version in doc,
       "wildcpu --version prints 'wildcpu %s', as docs/cli.md says" % version,
       "status %d: '%s'; docs/cli.md has %s" % (rc, o.strip(), re.findall(r"`wildcpu \d[^`]*`", doc)))

# ---- exit statuses -----------------------------------------------------------------------------
util_st = {int(v) for v in re.findall(r"WC_EXIT_\w+\s*=\s*(\d+)", read("include/wildcpu/util.h"))}
exit_sec = find_section(secs, "Exit status") or ""
doc_st = {int(v) for v in re.findall(r"^\|\s*`(\d+)`\s*\|", exit_sec, re.M)}
result(util_st and doc_st == util_st, "the exit statuses docs/cli.md lists are util.h's: %s" % sorted(util_st),
       "util.h: %s; docs/cli.md: %s" % (sorted(util_st), sorted(doc_st)))
texts = {"wildcpu %s --help" % cmd: text for cmd, text in helps.items()}
texts["wildcpu --help"] = out["help"][1]
for name, text in sorted(texts.items()):
    for para in re.findall(r"exit status:(.*?)(?:\n\n|\Z)", text, re.S):
        st = {int(v) for v in re.findall(r"(?<![\w.-])(\d+) (?=[A-Za-z])", para)}
        result(st and st <= util_st, "%s lists exit statuses %s, all util.h's" % (name, sorted(st)),
               para.strip())

# ---- the run directory and the environment -------------------------------------------------------
train_c = read("src/rundir.c")
# a name is string literals and macros that stand for them, concatenated: WC_RUNDIR_MAP ".aux.xml"
defines = {}
for f in ("src/rundir.c", "include/wildcpu/rundir.h", "include/wildcpu/ckpt.h",
          "include/wildcpu/report.h"):
    defines.update(re.findall(r"^#define (\w+) +(.+?)\s*$", read(f), re.M))
def spelled(expr, depth=0):
    parts = re.findall(r'"([^"]*)"|(\w+)', expr)
    if depth > 8 or any(m and m not in defines for _, m in parts):
        return expr
    return "".join(lit if not m else spelled(defines[m], depth + 1) for lit, m in parts)
block = re.search(r"RUN_FILES\[\] = \{(.*?)\n\};", train_c, re.S)
names = [spelled(e) for e in re.findall(r"^\s*\{([^,]+),", block.group(1), re.M)] if block else []
run_sec = find_section(secs, "The run directory") or ""
fresh = re.search(r"^\|\s*`--fresh[^`]*`.*$", doc, re.M)
missing = [n for n in names if not re.search(r"`DIR/%s/?`" % re.escape(n), run_sec)]
unmoved = [n for n in names if not fresh or not re.search(r"`%s/?`" % re.escape(n), fresh.group(0))]
result(len(names) >= 5 and not missing and not unmoved,
       "every file of a run directory in rundir.c (%d) is in docs/cli.md's table, and in what --fresh moves" % len(names),
       "not in 'The run directory': %s; not in the --fresh row: %s" % (missing, unmoved))
env = set()
for f in sorted(os.listdir(os.path.join(root, "src"))):
    if f.endswith(".c"):
        env |= set(re.findall(r'(?:getenv|CPLGetConfigOption)\(\s*"(\w+)"', read("src/" + f)))
env_sec = find_section(secs, "Environment") or ""
missing = sorted(v for v in env if "`%s`" % v not in env_sec)
result(len(env) >= 3 and not missing,
       "every environment variable the sources read (%d) is in docs/cli.md's Environment" % len(env),
       "missing: %s" % " ".join(missing))

# ---- links -------------------------------------------------------------------------------------
def slugs(md):
    seen, out = {}, set()
    for h in re.findall(r"^#{1,6} (.+)$", md, re.M):
        s = re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


bad, nlinks = [], 0
mds = ["README.md"] + ["docs/" + f for f in sorted(os.listdir(os.path.join(root, "docs"))) if f.endswith(".md")]
for rel in mds:
    text = re.sub(r"```.*?```", "", read(rel), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        nlinks += 1
        path, _, anchor = target.partition("#")
        full = os.path.realpath(os.path.join(root, os.path.dirname(rel), path)) if path else os.path.join(root, rel)
        if not full.startswith(os.path.realpath(root) + os.sep) or not os.path.exists(full):
            bad.append("%s: (%s) is outside the repository or missing" % (rel, target))
        elif anchor and full.endswith(".md") and anchor not in slugs(open(full, encoding="utf-8").read()):
            bad.append("%s: (%s): no such heading" % (rel, target))
result(not bad, "README.md and docs/*.md: all %d links lead to files and headings inside the repository" % nlinks,
       "\n".join(bad))

sys.exit(1 if failures else 0)
EOF
