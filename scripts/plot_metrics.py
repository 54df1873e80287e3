#!/usr/bin/env python3
"""scripts/plot_metrics.py — draws loss and throughput PNGs from a run's metrics.jsonl.

usage: plot_metrics.py OUT/metrics.jsonl [--out DIR]   (writes DIR/loss.png and DIR/throughput.png)
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_metrics(path):
    rows = []
    with open(path) as f:
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metrics")
    ap.add_argument("--out", help="directory for the PNGs (default: beside metrics.jsonl)")
    a = ap.parse_args()
    rows = read_metrics(a.metrics)
    out = a.out or os.path.dirname(os.path.abspath(a.metrics))
    os.makedirs(out, exist_ok=True)
    steps = [r["step"] for r in rows]

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, [r["loss"] for r in rows], label="train loss", lw=1)
    val = [(r["step"], r["val_loss"]) for r in rows if "val_loss" in r]
    if val:
        ax.plot(*zip(*val), "o-", label="val loss", ms=4)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/token)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "loss.png"), dpi=120)

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, [r["tokens_per_s"] for r in rows], lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("tokens / s")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "throughput.png"), dpi=120)
    print(f"wrote {out}/loss.png and {out}/throughput.png ({len(rows)} steps)")


if __name__ == "__main__":
    main()
