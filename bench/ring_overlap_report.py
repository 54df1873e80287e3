#!/usr/bin/env python3
"""bench/ring_overlap_report.py — bench/ring_overlap.sh's results.txt as tables (report.md) and a figure (ring_overlap.png).

Usage: ring_overlap_report.py RESULTS.txt --bench BUILD/ring_overlap --ringgpt BUILD/ringgpt --out DIR

Per link rate and tokens per rank: the ring attention time (one forward + backward of one sequence and one layer) with
overlap, without, the compute alone and the transfer alone (the serial baseline's block compute and waiting for pieces;
its waiting for a neighbour to reach a hop, lag, is neither; all three of its critical rank, the one with the most block
compute), the hidden fraction = (serial - lag - overlap) / min(compute, transfer), overlap driven by the progress thread instead of the compute loops,
overlap with neither (transfers move only inside MPI calls), and the timing model's prediction. Per rate: the crossover (tokens per rank where compute = transfer), measured (interpolated in log-log) and
predicted by FLOPs / bandwidth. Then `ringgpt plan`'s step time against the two-host training runs.
"""
import argparse
import json
import math
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SMALL = {"heads": 4, "kv_heads": 4, "head_dim": 64, "layers": 4}   # the `small` model's attention


def parse(path):
    rows = []
    for line in open(path):
        rec = {}
        for tok in line.split():
            if "=" in tok:
                k, v = tok.split("=", 1)
                try:
                    rec[k] = float(v) if k not in ("rate", "stage", "date", "commit", "calibrate", "device") else v
                except ValueError:
                    rec[k] = v
            else:
                rec["kind"] = tok
        rows.append(rec)
    return rows


def gbps(rate, link_gbps, links=None):
    """The link's rate in Gbit/s: measured on it when links has it, else the unlimited link's or the nominal tc rate."""
    if links and rate in links:
        return links[rate]["bandwidth_gbps"]
    if rate == "unlimited":
        return link_gbps
    n = float(rate.rstrip("bit").rstrip("kmg") or 0)
    unit = rate[len(rate.rstrip("bit")) - 1]
    return n * {"k": 1e-6, "m": 1e-3, "g": 1.0}.get(unit, 1e-9)


def predict(bench, L, gflops, link, latency_us, busy_share, host):
    out = subprocess.run([bench, "--predict", "--ranks", "2", "--tokens", str(L), "--attn-gflops", str(gflops),
                          "--link-gbps", str(link), "--latency-us", str(latency_us), "--busy-share", str(busy_share),
                          "--host-gbps", str(host)],
                         capture_output=True, text=True, check=True).stdout
    return {k: float(v) for k, v in (t.split("=") for t in out.split() if "=" in t)}


def plan(ringgpt, flags):
    """`ringgpt plan --device cpu --model small --json` with flags, as a dict."""
    out = subprocess.run([ringgpt, "plan", "--device", "cpu", "--model", "small", "--batch", "1", "--json"] + flags,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def crossover(points):
    """Tokens per rank where compute / transfer crosses 1, interpolated in log-log between measured points."""
    pts = sorted(points)
    for (l0, r0), (l1, r1) in zip(pts, pts[1:]):
        if (r0 - 1) * (r1 - 1) <= 0 and r0 != r1:
            a = (math.log(1) - math.log(r0)) / (math.log(r1) - math.log(r0))
            return math.exp(math.log(l0) + a * (math.log(l1) - math.log(l0)))
    return None


def busy_share_fit(bench, F, bw, link, links, fig_pts):
    """The model's overlap time against the measured one on the rate-limited links, for shares of the link's rate
    while the sender computes (the host's network stack at the unlimited link's rate): the `cpu` preset's share is the
    one with the least rms error."""
    rows = [(rate, L, on) for rate, pts in fig_pts.items() if rate != "unlimited" for (L, _, _, on, *_rest) in pts]
    if not rows:
        return []
    md = ["### The share of the link while a rank computes (the `cpu` preset's `busy_share`)\n",
          "The model's overlap time against the measured one on the %d rate-limited rows above, per share:\n" % len(rows),
          "| share | mean error | rms error |", "|---|---|---|"]
    best = None
    for share in [1.0, 0.9, 0.8, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4]:
        errs = [(predict(bench, L, F, gbps(rate, bw, links), links.get(rate, link)["latency_us"], share, bw)["attn_s"] - on) / on
                for rate, L, on in rows]
        rms = (sum(e * e for e in errs) / len(errs)) ** 0.5
        md.append("| %.2f | %+.1f %% | %.1f %% |" % (share, 100 * sum(errs) / len(errs), 100 * rms))
        if best is None or rms < best[1]:
            best = (share, rms)
    md.append("\nLeast rms error: %.2f.\n" % best[0])
    return md


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--bench", required=True)
    ap.add_argument("--ringgpt", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rows = parse(a.results)
    md = []
    # Calibrated on every core at once since 2026-11-27 (core=N): the slower core's rates, as the ring waits for it.
    cal_attn = {}
    for r in rows:
        if r.get("calibrate") == "attn" and r["attn_gflops"] < cal_attn.get(int(r["tokens"]), {"attn_gflops": 1e30})["attn_gflops"]:
            cal_attn[int(r["tokens"])] = r
    link = next((r for r in rows if r.get("calibrate") == "link" and r.get("stage") == "calibrate"), None)
    # per rate: the link as measured on it (stage=link); the prediction uses these, a rate without one its nominal rate
    links = {r["rate"]: r for r in rows if r.get("calibrate") == "link" and r.get("stage") == "link"}
    train1 = max((r for r in rows if r.get("kind") == "train1"), key=lambda r: r["step_s"], default=None)
    if not cal_attn or not link:
        sys.exit("ring_overlap_report.py: no calibration in %s (run the calibrate stage)" % a.results)
    F = cal_attn[max(cal_attn)]["attn_gflops"]          # attention GFLOP/s of one rank, the largest block
    lat, bw = link["latency_us"], link["bandwidth_gbps"]
    preset = plan(a.ringgpt, ["--seq-len", "4096"])
    md.append("### Calibration (one rank, one thread, a copy on every core at once: the slower core; the two-host link "
              "without a rate limit)\n")
    md.append("| figure | measured | the `cpu` preset of `ringgpt plan` |")
    md.append("|---|---|---|")
    for T, r in sorted(cal_attn.items()):
        md.append("| attention blocks, causal T=%d, GFLOP/s | %.2f | %s |" % (T, r["attn_gflops"],
                  "%.2f" % (preset["attn_flops"] / 1e9) if T == max(cal_attn) else ""))
    M = None   # the matmul rate: a one-rank step's time outside attention over its matmul FLOPs
    if train1 and 4096 in cal_attn:
        mm = plan(a.ringgpt, ["--seq-len", "4096", "--matmul-tflops", "1"])["matmul_s"] * 1e12
        outside = train1["step_s"] - SMALL["layers"] * cal_attn[4096]["attn_s"]
        if outside > 0:
            M = mm / outside / 1e9
            md.append("| matmul (a one-rank `small` step at T=4096 outside attention: %.3f of %.3f s), GFLOP/s | %.2f | %.2f |"
                      % (outside, train1["step_s"], M, preset["matmul_flops"] / 1e9))
    md.append("| link latency (8-byte sendrecv pair), us | %.1f | %.1f |" % (lat, preset["latency_s"] * 1e6))
    md.append("| link bandwidth (8 MiB pairs, both ways at once), Gbit/s | %.3f | %.3f |" % (bw, preset["link_bytes_per_s"] * 8 / 1e9))
    load = [r["load"] for r in rows if isinstance(r.get("load"), float)]
    md.append("\nLoad average before the timed runs: %.2f to %.2f.\n" % (min(load), max(load)) if load else "")

    sweep = {}
    for r in rows:
        if r.get("stage") == "sweep" and "attn_s" in r:
            # progress: compute (the default: the attention loops poke MPI), thread, off; results before the compute
            # mode had 1 (the thread, then the default) and 0
            prog = {1.0: "thread", 0.0: "off"}.get(r["progress"], r["progress"])
            mode = "off" if r["overlap"] == 0 else {"compute": "on", "thread": "thread"}.get(prog, "noprog")
            sweep.setdefault((r["rate"], int(r["tokens"])), {})[mode] = r
    rates = []
    for (rate, _) in sweep:
        if rate not in rates:
            rates.append(rate)
    md.append("### The overlap, per link rate and tokens per rank (2 ranks on 2 hosts, one thread each)\n")
    md.append("Times in seconds for one ring forward + backward (one sequence, one layer of `small`: 4 heads of 64); "
              "overlap and serial are the slowest rank's wall time (with `--paired`, measured in turns in one run, and every "
              "figure the median over the repetitions; hidden's numerator then the median over the pairs); "
              "compute and transfer alone are the serial baseline's block compute and waiting for pieces on its critical "
              "rank (the rank with the most block compute); lag = that rank's waiting for the other rank to reach a hop "
              "(the pieces' work differs between the ranks); hidden = (serial − lag − overlap) / min(compute, transfer); "
              "'hidden, mixed ranks' is the same formula with each figure's slowest rank (the figures before 2026-11-27); "
              "model = attention/ring.h's prediction from the calibrated rates, the `cpu` preset's share of the link "
              "while computing and the host's network stack at the unlimited link's rate.\n")
    md.append("| link | tokens/rank | overlap | serial | lag | compute alone | transfer alone | compute/transfer | hidden | "
              "hidden, mixed ranks | overlap, progress thread | overlap, neither | model: overlap / serial | model: hidden | load |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    fig_pts, violations, cross = {}, [], []
    for rate in rates:
        pts = []
        for L in sorted(L for (rt, L) in sweep if rt == rate):
            m = sweep[(rate, L)]
            if "on" not in m and "thread" in m:   # results from before the compute mode: the thread was the overlap
                m = dict(m, on=m["thread"])
                del m["thread"]
            if "on" not in m or "off" not in m:
                continue
            on, off = m["on"], m["off"]
            # The critical rank's figures (the most block compute; its wall = compute + wait + lag) where the bench
            # printed them (since 2026-11-27); before, each figure's slowest rank, which mixes ranks: the slowest lag
            # belongs to the rank with less compute, so serial - that lag - overlap understated what the overlap hid.
            comp, xfer, lag = off["compute_s"], off["wait_s"], off.get("lag_s", 0.0)   # no lag_s: results before 2026-11-25
            mixed = (off["attn_s"] - lag - on["attn_s"]) / min(comp, xfer) if min(comp, xfer) > 0 else float("nan")
            t_on, t_off = on["attn_s"], off["attn_s"]
            if "crit_compute_s" in off:
                comp, xfer, lag = off["crit_compute_s"], off["crit_wait_s"], off["crit_lag_s"]
            saved = t_off - lag - t_on
            if "paired_saved_s" in off:   # medians over the repetitions; saved: the median over the pairs
                comp, xfer, lag = off["med_crit_compute_s"], off["med_crit_wait_s"], off["med_crit_lag_s"]
                t_on, t_off, saved = on["med_attn_s"], off["med_attn_s"], off["paired_saved_s"]
            ratio = comp / xfer if xfer > 0 else float("inf")
            hidden = saved / min(comp, xfer) if min(comp, xfer) > 0 else float("nan")
            p = predict(a.bench, L, F, gbps(rate, bw, links), links.get(rate, link)["latency_us"], preset["busy_share"], bw)
            thr = "%.4f" % m["thread"]["attn_s"] if "thread" in m else "-"
            nop = "%.4f" % m["noprog"]["attn_s"] if "noprog" in m else "-"
            pm = min(p["compute_s"], p["transfer_s"])
            p_hidden = (p["serial_s"] - p["lag_s"] - p["attn_s"]) / pm if pm > 0 else float("nan")
            md.append("| %s | %d | %.4f | %.4f | %.4f | %.4f | %.4f | %.2f | %.2f | %.2f | %s | %s | %.4f / %.4f | %.2f | %.2f |" % (
                rate, L, t_on, t_off, lag, comp, xfer, ratio, hidden, mixed, thr, nop, p["attn_s"],
                p["serial_s"], p_hidden, on["load"]))
            pts.append((L, ratio))
            fig_pts.setdefault(rate, []).append((L, ratio, hidden, t_on, t_off, comp, xfer, on["wait_s"]))
            if ratio >= 1.2 and hidden < 0.8:
                violations.append("%s, %d tokens: compute/transfer %.2f, hidden %.2f" % (rate, L, ratio, hidden))
        H, Hkv = SMALL["heads"], SMALL["kv_heads"]
        # compute(L) = 14·hd·H·L² / F and transfer(L) = 24·Hkv·hd·L / B for two ranks (6 pieces of L·Hkv·hd fp32 each)
        pred = 24.0 * Hkv * F * 1e9 / (14.0 * H * gbps(rate, bw, links) * 1e9 / 8)
        cross.append((rate, crossover(pts), pred, gbps(rate, bw, links)))
    md.append("\nWhere compute ≥ 1.2 × transfer, the hidden fraction is below 0.8 in: %s.\n"
              % ("; ".join(violations) if violations else "no configuration"))
    md += busy_share_fit(a.bench, F, bw, link, links, fig_pts)
    md.append("### Crossover: tokens per rank where compute = transfer\n")
    md.append("| link | its measured rate, Gbit/s | measured | FLOPs / bandwidth (%.2f GFLOP/s, that rate) | "
              "measured / predicted |" % F)
    md.append("|---|---|---|---|---|")
    for rate, meas, pred, rate_gbps in cross:
        md.append("| %s | %.3f | %s | %.0f | %s |" % (rate, rate_gbps, "%.0f" % meas if meas else "outside the sweep", pred,
                                                      "%.2f" % (meas / pred) if meas else "-"))

    trains = [r for r in rows if r.get("kind") == "train2"]
    if trains and M:
        md.append("\n### `ringgpt plan` against two-host training runs (`small`, sp = 2, B = 1, one thread a rank)\n")
        md.append("Predicted with the rates calibrated above (matmul %.2f, attention %.2f GFLOP/s, latency %.1f us) and the "
                  "link's rate as measured on it (sendrecv pairs; unlimited: %.2f Gbit/s, also the host's network stack): `ringgpt plan "
                  "--device cpu --model small --sp 2 --matmul-tflops M --attn-tflops A --latency-us U --link-gbps B --host-gbps H`; "
                  "the steps after the first of each run.\n" % (M, F, lat, bw))
        md.append("| link | T | measured step (s) | predicted step (s) | error | measured ring wait, most of a rank (s) | "
                  "predicted exposed wait (s) | load |")
        md.append("|---|---|---|---|---|---|---|---|")
        for m in trains:
            p = plan(a.ringgpt, ["--seq-len", "%d" % m["tokens"], "--sp", "2", "--matmul-tflops", str(M / 1e3),
                                 "--attn-tflops", str(F / 1e3),
                                 "--latency-us", str(links.get(m["rate"], link)["latency_us"]),
                                 "--link-gbps", str(gbps(m["rate"], bw, links)), "--host-gbps", str(bw)])
            md.append("| %s | %d | %.3f | %.3f | %+.1f %% | %.3f | %.3f | %.2f |" % (
                m["rate"], m["tokens"], m["step_s"], p["step_s"], 100 * (p["step_s"] / m["step_s"] - 1), m["ring_wait_s"],
                p["ring_wait_s"], m["load"]))

    commit = next((r["commit"] for r in rows if "commit" in r), "?")
    date = next((r["date"] for r in rows if "date" in r), "?")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    for rate, pts in fig_pts.items():
        pts.sort()
        ax1.plot([p[1] for p in pts], [p[2] for p in pts], "o-", label=rate)
        line, = ax2.plot([p[0] for p in pts], [p[6] for p in pts], "--", label="%s: transfer alone" % rate)
        ax2.plot([p[0] for p in pts], [max(p[7], 1e-4) for p in pts], "o-", color=line.get_color(),
                 label="%s: exposed wait (overlap)" % rate)
    any_pts = next(iter(fig_pts.values()), [])
    if any_pts:
        ax2.plot([p[0] for p in sorted(any_pts)], [p[5] for p in sorted(any_pts)], "k:", label="compute alone")
    ax1.axvline(1.2, color="grey", lw=0.8)
    ax1.axhline(0.8, color="grey", lw=0.8)
    ax1.set_ylim(-0.5, 1.5)   # where the transfer is a few ms, noise puts the fraction far outside: clipped
    ax1.set_xscale("log")
    ax1.set_xlabel("compute / transfer (serial baseline)")
    ax1.set_ylabel("hidden fraction of min(compute, transfer) (clipped)")
    ax1.set_title("what the overlap hides (2 hosts, 1 thread a rank)")
    ax1.legend(title="link")
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ax2.set_xlabel("tokens per rank")
    ax2.set_ylabel("seconds per ring forward + backward")
    ax2.set_title("transfer alone vs what stays exposed")
    ax2.legend(fontsize=7)
    fig.suptitle("ring attention overlap on a veth link with tc tbf — commit %s, %s" % (commit, date), fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "ring_overlap.png"), dpi=110)
    text = "\n".join(md) + "\n"
    open(os.path.join(a.out, "report.md"), "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
