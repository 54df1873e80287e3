#!/usr/bin/env python3
# scripts/plot_passkey.py — heatmaps of `ringgpt passkey` results: exact match by length × depth, one panel per JSON file (stage × grid).
"""Usage: plot_passkey.py RESULT.json [MORE.json ...] [-o OUT.png] [--title TEXT]

Each JSON file is one `ringgpt passkey --out X` run (X.json); its "label" names the panel. The panels share
one colour scale: one row per kind of grid (the generator's filler, a real-text haystack, K distractors:
from the JSON's "haystack" and "distractors"), one column per checkpoint (the stages of a context-extension
run, whose grids' labels differ), in the order the files come. Default output: the first file's name with .png.
"""
import argparse
import json
import os
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyfind  # noqa: E402  (scripts/pyfind.py: finds a Python with matplotlib; --help works without it)


def load(path):
    import numpy as np
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"plot_passkey: {path}: {e}; give the OUT.json of `ringgpt passkey --out OUT`")
    lengths, depths = r["lengths"], r["depths"]
    grid = np.full((len(lengths), len(depths)), np.nan)
    for c in r["cells"]:
        grid[lengths.index(c["length"]), depths.index(c["depth"])] = 100.0 * c["exact_match"]
    return r, lengths, depths, grid


def grid_kind(r):
    hay = r.get("haystack", "generator filler")
    kind = "filler" if hay == "generator filler" else "haystack " + hay.rstrip("/").rsplit("/", 1)[-1]
    k = r.get("distractors", 0)
    return kind + (f", {k} distractor{'s' if k > 1 else ''}" if k else "")


def column_key(r):
    return r.get("checkpoint") or r.get("label", "")


def length_label(n):
    return f"{n // 1024}K" if n % 1024 == 0 else str(n)


def parse_args(doc, title):
    """The plotting scripts' command line (this one's and plot_ruler.py's): result files, -o OUT.png, --title."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+")
    ap.add_argument("-o", "--out")
    ap.add_argument("--title", default=title)
    return ap.parse_args()


def main():
    a = parse_args(__doc__, "passkey retrieval: exact match (%)")
    plt = pyfind.pyplot("plot_passkey")
    import numpy as np
    runs = [load(p) for p in a.results]
    kinds, columns = [], []
    for r in runs:
        kinds += [grid_kind(r[0])] if grid_kind(r[0]) not in kinds else []
        columns += [column_key(r[0])] if column_key(r[0]) not in columns else []
    width = max(len(r[2]) for r in runs)
    fig, axes = plt.subplots(len(kinds), len(columns), figsize=(1.2 + (0.45 * width + 1.0) * len(columns),
                                                                (1.8 + 0.45 * max(len(r[1]) for r in runs)) * len(kinds)),
                             squeeze=False, layout="constrained")
    for ax in axes.flat:
        ax.set_visible(False)
    for r, lengths, depths, grid in runs:
        row, col = kinds.index(grid_kind(r)), columns.index(column_key(r))
        ax = axes[row][col]
        ax.set_visible(True)
        im = ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=100, aspect="auto", origin="lower")
        for i in range(len(lengths)):
            for j in range(len(depths)):
                if not np.isnan(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.0f}", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(depths)), [f"{d:g}" for d in depths], fontsize=7)
        ax.set_yticks(range(len(lengths)), [length_label(n) for n in lengths], fontsize=8)
        trained = r.get("trained_seq_len", 0)
        title = textwrap.fill(f"{r.get('label', '')}: {grid_kind(r)}", 42)   # long labels wrap, not run into the next panel's
        ax.set_title(f"{title}\n(trained at {length_label(trained)}, θ={r.get('rope_theta', 0):g})", fontsize=9)
        ax.set_xlabel("depth of the key")
        if col == 0:
            ax.set_ylabel("context length (tokens)")
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label="exact match %")
    fig.suptitle(a.title, fontsize=10)
    out = a.out or a.results[0].rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=120, bbox_inches="tight")
    print(f"heatmap: {out}")


if __name__ == "__main__":
    sys.exit(main())
