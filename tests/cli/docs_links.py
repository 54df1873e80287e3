#!/usr/bin/env python3
"""tests/cli/docs_links.py — the README and docs/DESIGN.md link only to files that exist.

Checks markdown links [text](target) (relative to the document; web links and #anchors aside) and code spans that
name a repository file (`scripts/plot_metrics.py`, `data/FORMAT.md`: a path with a folder and a source or doc suffix).
usage: docs_links.py REPO_ROOT
"""
import os
import re
import sys

DOCS = ["README.md", "docs/DESIGN.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_PATH = re.compile(r"`((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+\.(?:md|sh|py|c|h|cu|cmake|txt)|[A-Za-z0-9_-]+\.md)`")
GENERATED = {"gpu_report/report.md"}   # files that commands write (named as output, not as links)


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    root = sys.argv[1]
    bad = checked = 0
    for doc in DOCS:
        path = os.path.join(root, doc)
        if not os.path.exists(path):
            print(f"FAIL {doc} is missing")
            bad += 1
            continue
        text = open(path, encoding="utf-8").read()
        targets = [(m.group(1), os.path.dirname(path)) for m in LINK.finditer(text)]
        targets += [(m.group(1), root) for m in CODE_PATH.finditer(text)]
        for target, base in targets:
            if re.match(r"^[a-z]+:", target) or target.startswith("#") or target in GENERATED:
                continue
            checked += 1
            if not os.path.exists(os.path.join(base, target.split("#")[0])):
                print(f"FAIL {doc} links to {target}, which does not exist")
                bad += 1
    print(f"{checked} links checked in {', '.join(DOCS)}")
    print(f"{int(bad == 0)} passed, {int(bad != 0)} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
