#!/usr/bin/env python3
"""scripts/plot_metrics.py — draws a run's metrics.jsonl: loss (train and val), learning rate, grad norm, throughput.

usage: plot_metrics.py OUT/metrics.jsonl [--out DIR] [--log] [--title T] [--hline Y:LABEL ...]
writes DIR/loss.png (train and val loss; --log: log-scale loss axis), DIR/optim.png (learning rate and gradient norm)
and DIR/throughput.png (tokens/s, and MFU when the run had it). --title T heads each plot; --hline Y:LABEL (repeatable)
draws a labelled reference line at loss Y, e.g. --hline 2.773:"no context (floor)". Needs matplotlib: when this Python
lacks it, the script runs itself with another python3 that has it, or says how to install it (scripts/pyfind.py).
"""
import argparse
import json
import math
import os
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyfind  # noqa: E402  (scripts/pyfind.py: finds a Python with matplotlib)


def read_metrics(path):
    rows = []
    try:
        f = open(path)
    except OSError as e:
        sys.exit(f"plot_metrics: {path}: {e.strerror}; give a run's OUT/metrics.jsonl")
    with f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"plot_metrics: {path}:{n}: not a JSON object ({e})")
    if not rows:
        sys.exit(f"plot_metrics: {path} has no steps yet")
    return rows


def series(rows, key):
    pts = [(r["step"], r[key]) for r in rows if key in r]
    return tuple(zip(*pts)) if pts else ((), ())


def parse_hline(spec, log):
    """Y:LABEL -> (float Y, LABEL); a bad one ends the script with one line (exit 2)."""
    y, sep, label = spec.partition(":")
    try:
        value = float(y)
    except ValueError:
        value = float("nan")
    if not sep or not label.strip() or not math.isfinite(value) or (log and value <= 0):
        print(f"plot_metrics: --hline '{spec}': expects Y:LABEL, a finite loss{' above 0 (--log)' if log else ''}, a colon "
              "and a label, e.g. --hline 2.773:\"floor\"", file=sys.stderr)
        sys.exit(2)
    return value, label.strip()


def titled(ax, title, what):
    """The plot's title: --title wrapped to the figure's width, then what the plot shows (if not the loss)."""
    if title:
        ax.set_title(textwrap.fill(title, 72) + (f"\n{what}" if what else ""), fontsize=11)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], usage=__doc__.splitlines()[2][7:])
    ap.add_argument("metrics", help="a run's OUT/metrics.jsonl")
    ap.add_argument("--out", help="directory for the PNGs (default: beside metrics.jsonl)")
    ap.add_argument("--log", action="store_true", help="log-scale loss axis")
    ap.add_argument("--title", help="a title over each plot (the loss plot's alone, the others with what they show)")
    ap.add_argument("--hline", action="append", default=[], metavar="Y:LABEL",
                    help="a dashed reference line at loss Y on the loss plot, named LABEL in its legend (repeatable)")
    a = ap.parse_args()
    hlines = [parse_hline(h, a.log) for h in a.hline]
    rows = read_metrics(a.metrics)
    plt = pyfind.pyplot("plot_metrics")
    out = a.out or os.path.dirname(os.path.abspath(a.metrics))
    os.makedirs(out, exist_ok=True)

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(*series(rows, "loss"), label="train loss", lw=1)
    vx, vy = series(rows, "val_loss")
    if vx:
        ax.plot(vx, vy, "o-", label="val loss", ms=4)
    colors = ["C3", "C2", "C4", "C5", "C6", "C7", "C8", "C9"]   # C0 and C1 are the train and val loss
    for i, (y, label) in enumerate(hlines):
        ax.axhline(y, ls="--", lw=1, color=colors[i % len(colors)], label=f"{label} ({y:g})")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/token)")
    titled(ax, a.title, "")
    if a.log:
        ax.set_yscale("log")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "loss.png"), dpi=120)

    fig, (lr, gn) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    lr.plot(*series(rows, "lr"), lw=1)
    lr.set_ylabel("learning rate")
    titled(lr, a.title, "learning rate and gradient norm")
    gn.plot(*series(rows, "grad_norm"), lw=1, color="C2")
    gn.set_ylabel("gradient norm (before clipping)")
    gn.set_xlabel("step")
    for ax in (lr, gn):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "optim.png"), dpi=120)

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(*series(rows, "tokens_per_s"), lw=1, label="tokens / s")
    ax.set_xlabel("step")
    ax.set_ylabel("tokens / s")
    titled(ax, a.title, "throughput")
    ax.grid(alpha=0.3)
    mx, my = series(rows, "mfu")
    if mx:
        ax2 = ax.twinx()
        ax2.plot(mx, [100 * m for m in my], lw=1, color="C3", label="MFU")
        ax2.set_ylabel("MFU (%)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "throughput.png"), dpi=120)
    print(f"wrote {out}/loss.png, optim.png and throughput.png ({len(rows)} steps)")


if __name__ == "__main__":
    main()
