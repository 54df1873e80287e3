#!/usr/bin/env python3
"""tests/cli/repo_paths.py — a clone stands alone: no tracked doc, script, test or source names a path outside the repository.

A user clones this repository and nothing else. Fails on every line of a tracked text file that names the
development workspace's folder beside the clone (`../` + `shared`, its gpu/tools/hooks folders) or an absolute
path of one machine (under the roots work, root, home and Users). Exempt: recipes/long_context/text.txt, a frozen
training corpus (a copy of the project's notes at 38bd023) whose bytes the recipe's published figures depend on.
usage: repo_paths.py REPO_ROOT
"""
import os
import re
import subprocess
import sys

SHARED = "../" + "shared"   # spelled in two pieces so that this file does not name it
PATTERNS = [
    re.compile(re.escape(SHARED) + r"\b"),
    re.compile(r"(?<![\w.~-])/(?:work|root)/"),
    re.compile(r"(?<![\w.~-])/(?:home|Users)/[A-Za-z0-9_.-]+/"),
    re.compile(r"\bshared/(?:gpu|tools|hooks|research)/"),
]
EXEMPT = {"recipes/long_context/text.txt"}
TEXT = re.compile(r"\.(md|sh|py|c|h|cu|cuh|cpp|cmake|txt|json|supp)$|(^|/)(CMakeLists\.txt|run|\.gitignore)$")


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    root = sys.argv[1]
    git = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    if git.returncode == 0:
        files = git.stdout.split()
    else:   # not a git checkout (an unpacked archive): every file but build trees
        files = [os.path.relpath(os.path.join(d, f), root) for d, ds, fs in os.walk(root) for f in fs
                 if not re.match(r"build|\.git", os.path.relpath(d, root))]
    bad = checked = 0
    for f in files:
        if f in EXEMPT or not TEXT.search(f):
            continue
        checked += 1
        with open(f"{root}/{f}", encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                for p in PATTERNS:
                    m = p.search(line)
                    if m:
                        print(f"FAIL {f}:{n} names {m.group(0)!r}, a path outside the repository: {line.strip()[:120]}")
                        bad += 1
    print(f"{checked} tracked files checked")
    print(f"{int(bad == 0)} passed, {int(bad != 0)} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
