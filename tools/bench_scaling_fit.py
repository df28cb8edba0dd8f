#!/usr/bin/python3
"""bench_scaling_fit.py: fits README.md's sizing model to what tools/bench_scaling.sh measured
and prints the fitted parameters, measured against modelled step times, and predictions for 8
to 1024 ranks. Python's standard library only.

    /usr/bin/python3 tools/bench_scaling_fit.py build/bench-scaling

The model (README.md, "Sizing a multi-node run"):

    t_step   = ceil(M/N) * t_micro + t_reduce(N)
    t_reduce = t_local + 2 (N-1)/N * S / bandwidth + 2 log2(N) * latency

with S the bytes each rank contributes (8 P for the exact int64 reduction, 4 P for
--fast-reduce) and t_local the reduction's own work on a rank (converting the sums back,
measured on 1 rank, where no byte moves).

What is fitted from what:
  t_micro    one micro-batch's forward, backward and fixed-point conversion on a core of its
             own: the 1-rank runs (compute seconds / micro-batches).
  c(N)       how much slower a micro-batch is when N ranks share the 2 cores: the N-rank runs'
             compute per micro-batch over t_micro (measured, not assumed: 4 ranks on 2 cores
             is not exactly 2x).
  bandwidth  per emulated link, from the reduction alone (tools/netbench: the same
             collectives after a barrier, so nobody waits for a slower rank's compute).
             The emulated link is one loopback shared by every rank in both directions: a
             ring Allreduce moves 2 (N-1)/N * S per rank, 2 (N-1) * S through the one queue,
             so on it t = (2 (N-1) S - burst) / bandwidth + 2 log2(N) latency (the tbf bucket
             refills while the ranks compute, so one burst goes free each step). The wire
             bytes are measured too and printed against 2 (N-1) S.
  latency    the one-way time of an 8-byte MPI ping-pong on that link (the fastest of all
             repetitions: the median on a loaded VM measures the scheduler, not the link).
  wait       what the training runs' reduction time holds beyond t_local and the reduction
             alone: waiting for the slowest rank to finish its micro-batches.
  cross-check: the training runs' reduction seconds fitted on their own (intercept per rank
             count = local work + wait, slope per link from exact vs --fast-reduce and 2 vs 4
             ranks = 1/bandwidth).
Predictions use one micro-batch per rank (B = m N, the fastest step a rank count allows; with
a fixed B = 32 and m = 4 nothing scales beyond 8 ranks), t_micro of a core of its own, the
fitted t_local, and a switched fabric (a link per node) at the nominal rate times the TCP
efficiency fitted at 1 Gb/s (the emulated link that is limited by the link, not by the CPU).
"""
import json
import math
import os
import statistics
import sys

FABRICS = [  # name, nominal bits/s, one-way latency assumed (not emulated: see README)
    ("10 GbE", 10e9, 25e-6),
    ("100 Gb/s IB", 100e9, 2e-6),
]
PRED_RANKS = [8, 16, 32, 64, 128, 256, 512, 1024]
LINK_RATE = {"unshaped": None, "10g": 10e9, "1g": 1e9}
LINK_NAME = {"unshaped": "unshaped", "10g": "10 Gb/s", "1g": "1 Gb/s"}


def kv(line):
    out = {}
    for tok in line.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = v
    return out


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def rng(xs, scale=1.0, fmt="%.0f"):
    if len(xs) < 2:
        return ""
    return " (" + fmt % (min(xs) * scale) + "-" + fmt % (max(xs) * scale) + ")"


def solve(a, b):
    """Gaussian elimination with partial pivoting; a is n x n, b n."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        if abs(m[c][c]) < 1e-300:
            return None
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                for k in range(c, n + 1):
                    m[r][k] -= f * m[c][k]
    return [m[i][n] / m[i][i] for i in range(n)]


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "build/bench-scaling"
    machine, params, gflop = {}, {}, {}
    for line in open(os.path.join(d, "machine.txt")):
        line = line.rstrip("\n")
        if line.startswith("net="):
            f = kv(line)
            params[f["net"]] = int(f["params"])
            gflop[f["net"]] = float(f["gflop_per_sample"])
        elif "=" in line:
            k, v = line.split("=", 1)
            machine[k] = v
    burst = {"unshaped": 0.0, "10g": float(machine.get("burst_bytes_10g", 0)),
             "1g": float(machine.get("burst_bytes_1g", 0))}

    # ---- the links ------------------------------------------------------------------------
    # several interleaved rounds of each measurement: the median of the rounds' medians
    pp_rounds, iperf = {}, {}
    for line in open(os.path.join(d, "pingpong.txt")):
        f = kv(line)
        if " pingpong " in line:
            pp_rounds.setdefault((f["link"], int(f["bytes"])), []).append(f)
        elif " iperf3 " in line:
            iperf[f["link"]] = float(f["Mbps"]) if f["Mbps"] != "nan" else float("nan")
    pp = {k: dict(oneway_s=med([float(f["oneway_s"]) for f in v]),
                  min_s=min(float(f["min_s"]) for f in v))
          for k, v in pp_rounds.items()}
    for (l, n), v in pp.items():
        v["bandwidth_Bps"] = n / v["oneway_s"]
    links = [l for l in ("unshaped", "10g", "1g") if (l, 8) in pp]
    # the link's latency is the fastest 8-byte round trip of all rounds: on a loaded VM the
    # median holds the scheduler's time slices (milliseconds), which are not the network's
    latency = {l: pp[(l, 8)]["min_s"] for l in links}

    groups = {}
    for line in open(os.path.join(d, "allreduce.txt")):
        f = kv(line)
        groups.setdefault((f["link"], f["net"], f["mode"], int(f["ranks"])), []).append(f)
    ar = []
    for (l, net, mode, n), fs in groups.items():
        ar.append(dict(link=l, net=net, mode=mode, n=n, S=float(fs[0]["bytes"]),
                       t=med([float(f["median_s"]) for f in fs]),
                       tmin=min(float(f["min_s"]) for f in fs),
                       tmax=max(float(f["max_s"]) for f in fs),
                       wire=med([float(f["wire_bytes"]) for f in fs]), rounds=len(fs)))
    order = {"unshaped": 0, "10g": 1, "1g": 2}
    ar.sort(key=lambda r: (order[r["link"]], r["n"], r["net"], r["mode"]))

    def wire_model(n, S):
        return 2 * (n - 1) * S  # through the one shared loopback queue

    bw = {}
    for l in links:
        num = den = 0.0
        for r in ar:
            if r["link"] != l:
                continue
            x = max(wire_model(r["n"], r["S"]) - burst[l], 0.0)
            y = max(r["t"] - 2 * math.log2(r["n"]) * latency[l], 0.0)
            w = 1.0 / r["t"] ** 2  # relative errors: every size counts alike
            num += w * x * y
            den += w * x * x
        bw[l] = den / num if num > 0 else float("nan")

    def t_allreduce(n, S, l):
        if n == 1:
            return 0.0
        return max(wire_model(n, S) - burst[l], 0.0) / bw[l] + 2 * math.log2(n) * latency[l]

    # ---- the training runs ----------------------------------------------------------------
    runs = []
    lines = open(os.path.join(d, "runs.tsv")).read().split("\n")
    head = lines[0].split("\t")
    for line in lines[1:]:
        if not line.strip():
            continue
        r = dict(zip(head, line.split("\t")))
        rep = json.load(open(os.path.join(d, "runs", r["id"] + ".report.json")))
        el = []
        for ml in open(os.path.join(d, "runs", r["id"] + ".metrics.jsonl")):
            j = json.loads(ml)
            if j.get("type") == "train":
                el.append(j["elapsed_s"])
        steps = rep["steps_this_run"]
        n = int(r["ranks"])
        M = int(r["batch"]) // int(r["micro"])
        mine = M // n  # every configuration deals M evenly
        deltas = [b - a for a, b in zip(el, el[1:])]
        runs.append(dict(net=r["net"], n=n, link=r["link"], mode=r["mode"], M=M, mine=mine,
                         S=params[r["net"]] * (8 if r["mode"] == "exact" else 4),
                         compute=rep["time_compute_s"] / steps,
                         reduce=rep["time_reduce_s"] / steps,
                         micro=rep["time_compute_s"] / steps / mine,
                         wall=med(deltas) if deltas else float("nan"),
                         io=rep["time_io_wait_s"] / steps,
                         wire=float(r["lo_bytes"]) / steps, load=float(r["load1"])))

    def sel(**kw):
        return [r for r in runs if all(r[k] == v for k, v in kw.items())]

    nets = [n for n in ("unet-lite", "unet-wide") if sel(net=n)]
    t_micro, t_local = {}, {}
    for net in nets:
        for mode in ("exact", "fast"):
            one = sel(net=net, n=1, mode=mode)
            if one:
                t_micro[(net, mode)] = med([r["micro"] for r in one])
                t_local[(net, mode)] = med([r["reduce"] for r in one])
    share = {}
    for n in (2, 4):
        xs = [r["micro"] / t_micro[("unet-lite", r["mode"])] for r in sel(net="unet-lite", n=n)
              if ("unet-lite", r["mode"]) in t_micro]
        share[n] = med(xs)
    share[1] = 1.0
    wide_measured = ("unet-wide", "exact") in t_micro
    if not wide_measured and "unet-wide" in params:
        # modelled from FLOPs: same GFLOP/s as unet-lite, reduction work scaled by P
        t_micro[("unet-wide", "exact")] = (t_micro[("unet-lite", "exact")]
                                           * gflop["unet-wide"] / gflop["unet-lite"])
        t_local[("unet-wide", "exact")] = (t_local[("unet-lite", "exact")]
                                           * params["unet-wide"] / params["unet-lite"])

    # cross-check: the training runs' reduction seconds alone (unet-lite, 2 and 4 ranks)
    cfgs = {}
    for r in sel(net="unet-lite"):
        if r["n"] > 1:
            cfgs.setdefault((r["n"], r["link"], r["mode"], r["S"]), []).append(r["reduce"])
    unknowns = ["a2", "a4"] + ["u_" + l for l in links]
    A = [[0.0] * len(unknowns) for _ in unknowns]
    bvec = [0.0] * len(unknowns)
    for (n, l, mode, S), xs in cfgs.items():
        y = med(xs) - 2 * math.log2(n) * latency[l]
        row = [0.0] * len(unknowns)
        row[unknowns.index("a%d" % n)] = 1.0
        row[unknowns.index("u_" + l)] = max(wire_model(n, S) - burst[l], 0.0)
        w = 1.0 / med(xs) ** 2
        for i in range(len(row)):
            bvec[i] += w * row[i] * y
            for k in range(len(row)):
                A[i][k] += w * row[i] * row[k]
    xfit = solve(A, bvec) if len(cfgs) >= len(unknowns) else None

    # ---- print ----------------------------------------------------------------------------
    P = params.get("unet-lite")
    print()
    print("## Machine")
    print()
    print("%s, %s cores (%s VM), kernel %s, %s; load average %s at the start, %s at the end; "
          "%s s." % (machine.get("cpu"), machine.get("cpus"), machine.get("hypervisor"),
                     machine.get("kernel"), machine.get("mpi"), machine.get("loadavg_start"),
                     machine.get("loadavg_end", "?"), machine.get("elapsed_s", "?")))
    print("The network is emulated on this one machine: Open MPI over TCP (ob1, btl tcp,self) "
          "inside a private network namespace whose loopback is shaped with tbf (%s; %s)." %
          (machine.get("tbf_10g"), machine.get("tbf_1g")))
    print()
    print("## The emulated links (is the shaping real?)")
    print()
    print("| link | MPI ping-pong 4 MiB | 1 MiB | one-way latency (8 B) | iperf3 TCP | "
          "fitted bandwidth (reduction alone) | of nominal |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for l in links:
        big, mid = pp.get((l, 4 << 20)), pp.get((l, 1 << 20))
        ip = iperf.get(l)
        rate = LINK_RATE[l]
        print("| %s | %.2f Gb/s | %.2f Gb/s | %.1f us | %s | %.2f Gb/s | %s |" % (
            LINK_NAME[l], 8 * float(big["bandwidth_Bps"]) / 1e9,
            8 * float(mid["bandwidth_Bps"]) / 1e9, 1e6 * latency[l],
            "%.2f Gb/s" % (ip / 1e3) if ip is not None and ip == ip else "-",
            8 * bw[l] / 1e9, "%.0f%%" % (100 * 8 * bw[l] / rate) if rate else "-"))
    print()
    print("## The reduction alone (tools/netbench: MPI_Allreduce + MPI_MAX after a barrier)")
    print()
    print("| link | ranks | network, reduction | S (MB) | measured median (min-max) | "
          "modelled | on the wire per op: measured / 2(N-1)S |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for r in ar:
        print("| %s | %d | %s %s | %.2f | %.1f ms (%.1f-%.1f) | %.1f ms | %.1f / %.1f MB |" % (
            LINK_NAME[r["link"]], r["n"], r["net"], r["mode"], r["S"] / 1e6, 1e3 * r["t"],
            1e3 * r["tmin"], 1e3 * r["tmax"], 1e3 * t_allreduce(r["n"], r["S"], r["link"]),
            r["wire"] / 1e6, wire_model(r["n"], r["S"]) / 1e6))
    print()
    print("## Fitted parameters")
    print()
    for net in nets + ([] if wide_measured else ["unet-wide"]):
        if (net, "exact") not in t_micro:
            continue
        how = "measured on 1 rank" if (net != "unet-wide" or wide_measured) else \
            "modelled: unet-lite's t_micro x the FLOP ratio"
        print("- %s: P = %d (S = %.2f MB exact, %.2f MB fast), %.3f GFLOP per sample; "
              "t_micro (m = 4) = %.3f s exact%s (%s), %.1f GFLOP/s; t_local = %.1f ms per step" % (
                  net, params[net], 8 * params[net] / 1e6, 4 * params[net] / 1e6, gflop[net],
                  t_micro[(net, "exact")],
                  ", %.3f s fast" % t_micro[(net, "fast")] if (net, "fast") in t_micro else "",
                  how, 4 * gflop[net] / t_micro[(net, "exact")],
                  1e3 * t_local[(net, "exact")]))
    if ("unet-lite", "fast") in t_micro:
        ex = [r["micro"] for r in sel(net="unet-lite", n=1, mode="exact")]
        fa = [r["micro"] for r in sel(net="unet-lite", n=1, mode="fast")]
        print("- fixed-point conversion (exact minus fast compute, per micro-batch, unet-lite, "
              "1 rank): %.1f ms; the runs' t_micro spread over %.0f-%.0f ms (exact) and "
              "%.0f-%.0f ms (fast), so a difference below that spread is not resolved here" % (
                  1e3 * (t_micro[("unet-lite", "exact")] - t_micro[("unet-lite", "fast")]),
                  1e3 * min(ex), 1e3 * max(ex), 1e3 * min(fa), 1e3 * max(fa)))
    print("- core sharing: a micro-batch takes c(2) = %.2fx and c(4) = %.2fx as long on 2 and "
          "4 ranks as on 1 rank (2 cores)" % (share[2], share[4]))
    for l in links:
        print("- %s: bandwidth %.3f GB/s (%.2f Gb/s), latency %.1f us, burst %.0f kB" % (
            LINK_NAME[l], bw[l] / 1e9, 8 * bw[l] / 1e9, 1e6 * latency[l], burst[l] / 1e3))
    if xfit:
        fx = dict(zip(unknowns, xfit))
        print("- cross-check, training runs alone (reduce s/step = a_N + wire bytes / "
              "bandwidth): a_2 = %.1f ms, a_4 = %.1f ms; %s" % (
                  1e3 * fx["a2"], 1e3 * fx["a4"], ", ".join(
                      "%s %s" % (LINK_NAME[l], "%.2f Gb/s" % (8 / fx["u_" + l] / 1e9)
                                 if fx["u_" + l] > 0 else "not resolved (slope <= 0)")
                      for l in links)))
    eta = bw["1g"] / (1e9 / 8) if "1g" in bw else 0.94
    print("- TCP efficiency used for the predictions: %.0f%% of the nominal rate (fitted at "
          "1 Gb/s)" % (100 * eta))
    print()

    print("## Measured against modelled (per step, rank 0; medians over repetitions, ranges "
          "in brackets)")
    print()
    print("| network | ranks | link | reduction | step measured | step modelled | reduction "
          "measured | reduction modelled | of which waiting | loopback MB/step |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|")
    keys = sorted({(r["net"], r["n"], r["link"], r["mode"]) for r in runs},
                  key=lambda k: (nets.index(k[0]), k[1], order[k[2]], k[3]))
    for net, n, l, mode in keys:
        rs = sel(net=net, n=n, link=l, mode=mode)
        step = [r["compute"] + r["reduce"] for r in rs]
        red = [r["reduce"] for r in rs]
        S = rs[0]["S"]
        tm = t_micro.get((net, mode), t_micro.get((net, "exact")))
        tl = t_local.get((net, mode), t_local.get((net, "exact")))
        m_red = tl + t_allreduce(n, S, l)
        m_step = rs[0]["mine"] * share[n] * tm + m_red
        alone = [a["t"] for a in ar if a["net"] == net and a["mode"] == mode and a["n"] == n
                 and a["link"] == l]
        wait = med(red) - tl - (alone[0] if alone else 0.0)
        print("| %s | %d | %s | %s | %.3f s%s | %.3f s | %.1f ms%s | %.1f ms | %s | %.1f |" % (
            net, n, LINK_NAME[l] if n > 1 else "-", mode, med(step), rng(step, 1, "%.3f"),
            m_step, 1e3 * med(red), rng(red, 1e3, "%.1f"), 1e3 * m_red,
            "%.1f ms" % (1e3 * wait) if n > 1 else "-", med([r["wire"] for r in rs]) / 1e6))
    print()
    print("Step = compute + reduction seconds per step (report.json's time_compute_s and "
          "time_reduce_s over the steps); the modelled compute of the wide network uses "
          "unet-lite's c(N). Waiting = measured reduction - t_local - the reduction alone "
          "(netbench). Loopback MB/step: the namespace's loopback bytes over the run / steps "
          "(start-up collectives included; 0 on 1 rank).")
    print()

    print("## Predicted: one micro-batch of 4 per rank per step (B = 4N), switched fabric")
    print()
    pred_nets = [n for n in ("unet-lite", "unet-wide") if (n, "exact") in t_micro]
    hdr = "| ranks |"
    sub = "|---:|"
    for net in pred_nets:
        for fname, _, _ in FABRICS:
            hdr += " %s, %s: step | efficiency |" % (net, fname)
            sub += "---:|---:|"
    print(hdr)
    print(sub)
    for n in PRED_RANKS:
        row = "| %d |" % n
        for net in pred_nets:
            S = 8 * params[net]
            base = t_micro[(net, "exact")] + t_local[(net, "exact")]
            for fname, rate, lat in FABRICS:
                t_red = 2 * (n - 1) / n * S / (eta * rate / 8) + 2 * math.log2(n) * lat
                row += " %.3f s | %.1f%% |" % (base + t_red, 100 * base / (base + t_red))
        print(row)
    print()
    for net in pred_nets:
        S = 8 * params[net]
        base = t_micro[(net, "exact")] + t_local[(net, "exact")]
        for fname, rate, lat in FABRICS:
            bwt = 2 * S / (eta * rate / 8)
            ring = 2 * 1023 * lat
            print("- %s on %s: the reduction is %.1f ms of bytes (2S/bandwidth) + %.2f ms of "
                  "latency at 1024 ranks (2 log2 N); a ring Allreduce pays 2(N-1) latencies "
                  "instead: %.1f ms, efficiency %.1f%%" % (
                      net, fname, 1e3 * bwt, 1e3 * 20 * lat, 1e3 * ring,
                      100 * base / (base + bwt * 1023 / 1024 + ring)))
    print()
    for net in pred_nets:
        one = sel(net=net, n=1, mode="exact")
        if not one:
            continue
        fast = min(r["micro"] for r in one)
        S = 8 * params[net]
        _, rate, lat = FABRICS[0]
        t_red = 2 * 1023 / 1024 * S / (eta * rate / 8) + 20 * lat
        base = fast + t_local[(net, "exact")]
        print("- %s: with the least disturbed 1-rank run's t_micro (%.3f s instead of the "
              "median %.3f s) the 1024-rank efficiency on 10 GbE is %.1f%%" % (
                  net, fast, t_micro[(net, "exact")], 100 * base / (base + t_red)))
    print()
    print("Efficiency = (t_micro + t_local) / t_step: throughput per rank against one rank "
          "alone. Not in the model: waiting for the slowest rank (measured above), the "
          "optimizer update and data waits (outside compute and reduction), the reduction "
          "arithmetic inside MPI_Allreduce at InfiniBand rates, and the fabric's contention.")
    if not wide_measured and "unet-wide" in params:
        print("unet-wide was not run (WIDE_REPS=0): it is modelled from its parameter count "
              "and FLOPs.")


if __name__ == "__main__":
    main()
