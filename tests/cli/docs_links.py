#!/usr/bin/env python3
"""tests/cli/docs_links.py — the README and every page under docs/ link only to files that exist.

Checks README.md and docs/*.md: markdown links [text](target) (relative to the document; web
links and #anchors aside) and code spans that name a repository file (`scripts/plot_metrics.py`, `data/FORMAT.md`: a
path with a folder and a source or doc suffix, relative to the repository root). A link's #anchor into a markdown
page must name one of its headings (GitHub's slugs: lower case, punctuation dropped, spaces as hyphens).
usage: docs_links.py REPO_ROOT
"""
import glob
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_PATH = re.compile(r"`((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+\.(?:md|sh|py|c|h|cu|cmake|txt)|[A-Za-z0-9_-]+\.md)`")
GENERATED = {"gpu_report/report.md"}   # files that commands write (named as output, not as links), besides OUT/...


def anchors(path):
    """The GitHub anchors of a markdown file's headings (fenced code aside)."""
    slugs, fenced = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"^#{1,6} ", line):
            text = re.sub(r"[`*]", "", line.lstrip("#").strip()).lower()
            slugs.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return slugs


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    root = sys.argv[1]
    docs = ["README.md", "docs/DESIGN.md"]   # these two must exist; every other page is found
    docs += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs/*.md")))
    docs = list(dict.fromkeys(docs))
    bad = checked = 0
    for doc in docs:
        path = os.path.join(root, doc)
        if not os.path.exists(path):
            print(f"FAIL {doc} is missing")
            bad += 1
            continue
        text = open(path, encoding="utf-8").read()
        targets = [(m.group(1), os.path.dirname(path)) for m in LINK.finditer(text)]
        targets += [(m.group(1), root) for m in CODE_PATH.finditer(text)]
        for target, base in targets:
            if re.match(r"^[a-z]+:", target) or target in GENERATED or target.startswith("OUT/"):   # OUT: a run directory
                continue
            checked += 1
            file, _, anchor = target.partition("#")
            dest = os.path.join(base, file) if file else path
            if not os.path.exists(dest):
                print(f"FAIL {doc} links to {target}, which does not exist")
                bad += 1
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                print(f"FAIL {doc} links to {target}: {file or doc} has no heading with that anchor")
                bad += 1
    print(f"{checked} links checked in {len(docs)} pages: {', '.join(docs)}")
    print(f"{int(bad == 0)} passed, {int(bad != 0)} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
