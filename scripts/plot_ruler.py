#!/usr/bin/env python3
# scripts/plot_ruler.py — heatmaps of `ringgpt ruler` results: score by task × length with each length's average, one panel per results.json.
"""Usage: plot_ruler.py RESULTS.json [MORE.json ...] [-o OUT.png] [--title TEXT]

Each file is one `ringgpt ruler --out DIR` run (DIR/results.json); its "label" names the panel, which also says
the effective length and the samples per cell. The panels share one colour scale. Default output: the first
file's directory, ruler.png.
"""
import json
import os
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyfind  # noqa: E402  (scripts/pyfind.py: finds a Python with matplotlib; --help works without it)
from plot_passkey import length_label, parse_args  # noqa: E402  (the same length labels and command line)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            r = json.load(f)
        r["lengths"], r["tasks"], r["scores"], r["average"]   # the keys every panel reads
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"plot_ruler: {path}: {e}; give the results.json of `ringgpt ruler --out DIR`")
    return r


def panel(ax, r, np):
    rows = r["tasks"] + ["average"]
    grid = np.array([r["scores"][t] for t in r["tasks"]] + [r["average"]], dtype=float)   # (tasks + 1, lengths)
    im = ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            ax.text(j, i, f"{grid[i, j]:.0f}", ha="center", va="center", fontsize=7,
                    fontweight="bold" if rows[i] == "average" else "normal")
    ax.axhline(len(r["tasks"]) - 0.5, color="black", linewidth=1)
    ax.set_xticks(range(len(r["lengths"])), [length_label(n) for n in r["lengths"]], fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    eff = r.get("effective_length", 0)
    title = textwrap.fill(r.get("label", ""), 44)
    ax.set_title(f"{title}\n{r.get('samples', '?')} samples a cell; effective length "
                 f"{length_label(eff) if eff else 'none'} (≥ {r.get('threshold', 85.6):g} %)", fontsize=9)
    ax.set_xlabel("context length (tokens)")
    return im


def main():
    a = parse_args(__doc__, "RULER: score (%) by task and length")
    runs = [load(p) for p in a.results]
    plt = pyfind.pyplot("plot_ruler")
    import numpy as np
    width = max(len(r["lengths"]) for r in runs)
    height = max(len(r["tasks"]) for r in runs) + 1
    fig, axes = plt.subplots(1, len(runs), figsize=(1.5 + (0.6 * width + 2.2) * len(runs), 1.4 + 0.32 * height),
                             squeeze=False, layout="constrained")
    for ax, r in zip(axes[0], runs):
        im = panel(ax, r, np)
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label="score %")
    fig.suptitle(a.title, fontsize=10)
    out = a.out or os.path.join(os.path.dirname(a.results[0]) or ".", "ruler.png")
    fig.savefig(out, dpi=120, bbox_inches="tight")
    print(f"heatmap: {out}")


if __name__ == "__main__":
    sys.exit(main())
