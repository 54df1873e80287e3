#!/usr/bin/env bash
# tests/cli/readme_commands.sh — the README's commands run as written and print what it shows: each ```sh block, in order, in a scratch copy of the tree.
#
# The copy holds the tree's files (tracked and untracked, not ignored) and is a git repository of its own, so that
# what the commands write can be checked against .gitignore: no README command writes outside what git ignores
# (the Quick start once wrote data/docs/ into the source tree). bin/ comes first in PATH: `ringgpt` is the built
# binary, `mpiexec` the given one, as it is (the README's mpiexec lines carry their own flags). Each block runs as
# one bash script (set -e: its first failing command fails it); skipped, and counted: the block naming
# scripts/demo.sh and scripts/test.sh (they build and run this test) and blocks whose first line is "# (build)",
# "# (GPU)" or "# (Slurm)". Each ```text block after a block that ran is checked against that block's output: its
# lines, in order, among the output's with every number masked ("..." skips lines); a sampled text only by its
# prompt. Also checked: every --out and --to hf path of every block is ignored by git, no command reads docs/, the
# README names both scripts in its first lines and stays within 300 lines.
# usage: readme_commands.sh RINGGPT MPIEXEC   (README_REGEN=FILE: also write FILE, the README with this run's output
#        in its ```text blocks — copy it over README.md after a change of output)
set -uo pipefail
BIN=$1 MPIEXEC=${2:-mpiexec}
. "$(dirname "$0")/common.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
README=$ROOT/README.md

# -- the README's shape
check "README names scripts/demo.sh and scripts/test.sh in its first 15 lines" \
  bash -c "head -15 '$README' | grep -q '^scripts/demo.sh' && head -15 '$README' | grep -q '^scripts/test.sh'"
check "README is at most 300 lines ($(wc -l < "$README"))" test "$(wc -l < "$README")" -le 300

# -- the scratch copy and bin/
mpi=$(command -v "$MPIEXEC") || { bad "no mpiexec ($MPIEXEC): the README's multi-rank commands cannot run"; finish; exit; }
git -C "$ROOT" rev-parse --git-dir > /dev/null 2>&1 || { bad "$ROOT is not a git checkout: the copy needs its file list"; finish; exit; }
mkdir -p "$W/bin" "$W/repo"
(cd "$ROOT" && git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$W/repo"
git -C "$W/repo" init -q && git -C "$W/repo" add -A
check "the scratch copy holds the README and .gitignore" test -s "$W/repo/README.md" -a -s "$W/repo/.gitignore"
ln -s "$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")" "$W/bin/ringgpt"
ln -s "$mpi" "$W/bin/mpiexec"

# -- as a user too: where this runs as root, the README's mpiexec line (its flags as written) starts ranks as nobody
launcher=$(sed -nE 's/^(mpiexec [^`]*)ringgpt .*/\1/p' "$README" | head -1)
check "the README's mpiexec lines carry what root needs (--allow-run-as-root): $launcher" grep -q -- "--allow-run-as-root" <<< "$launcher"
if [[ $(id -u) == 0 ]] && command -v runuser > /dev/null && runuser -u nobody -- test -x "$BIN"; then
  check "as a user (nobody): ${launcher}ringgpt --version runs" \
    bash -c "cd / && runuser -u nobody -- env PATH='$(dirname "$mpi")':/usr/bin:/bin ${launcher/mpiexec/"$mpi"} '$BIN' --version > /dev/null"
else echo "note: not root, or nobody cannot run $BIN: the blocks ran as $(id -un) only"; fi

# -- the blocks: run, checked, counted (python3 prints ok/FAIL lines and leaves "passed failed" in $W/counts)
python3 - "$W/repo/README.md" "$W/repo" "$W" "${README_REGEN:-}" <<'PY'
import os, re, subprocess, sys

readme, repo, work, regen = sys.argv[1:5]
lines = open(readme, encoding="utf-8").read().split("\n")
passed = failed = 0

def report(ok, what, detail=""):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + what)
    if not ok and detail:
        print("\n".join("    " + l for l in detail.rstrip("\n").split("\n")[-15:]))
    passed, failed = passed + ok, failed + (not ok)

# Blocks: (kind, first line index of the body, body lines).
blocks, i = [], 0
while i < len(lines):
    m = re.match(r"^```(sh|text)\s*$", lines[i])
    if not m:
        i += 1
        continue
    j = i + 1
    while not lines[j].startswith("```"):
        j += 1
    blocks.append((m.group(1), i + 1, lines[i + 1:j]))
    i = j + 1

def skip_reason(body):
    m = re.match(r"^# \((build|GPU|Slurm)\)", body[0]) if body else None
    if m:
        return m.group(1)
    if any(re.match(r"^scripts/(demo|test)\.sh", l) for l in body):
        return "runs the build and this test"
    return None

# Every output path, of the blocks that run and of those that do not, is one git ignores.
for kind, _, body in blocks:
    if kind != "sh":
        continue
    text = " ".join(body)
    for path in re.findall(r"(?:--out|--to hf)\s+(\S+)", text):
        path = path.replace("$SLURM_JOB_ID", "1")
        ok = subprocess.run(["git", "-C", repo, "check-ignore", "-q", "--no-index", path]).returncode == 0
        report(ok, f"output path {path} is ignored by git (.gitignore), not in a source folder")
    reads_docs = re.search(r"(^|\s)\.?/?docs(/|\s|$)", "\n".join(l for l in body if not l.lstrip().startswith("#")))
    if reads_docs:
        report(False, "no README command reads docs/ (the docs are not a product input): " + text)

NUM = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")
def masked(line):
    return " ".join(NUM.sub("#", line).split())

def match_lines(shown, out):
    """For each shown line, in order, the output line it is (numbers masked; among equals, the one sharing the most
    numbers); None where there is none. "..." lines stand for themselves."""
    at, result = 0, []
    for s in shown:
        if s.strip() == "...":
            result.append(s)
            continue
        best, score = None, -1
        for k in range(at, len(out)):
            if masked(out[k]) == masked(s):
                n = len(set(NUM.findall(out[k])) & set(NUM.findall(s)))
                if n > score:
                    best, score = k, n
        result.append(out[best].rstrip() if best is not None else None)
        at = best + 1 if best is not None else at
    return result

def check_text(body, out, cmd, where):
    """The replacement body of a ```text block after a block whose output is out."""
    prompt = re.search(r'ringgpt sample .*--prompt "([^"]*)"', cmd)
    if prompt:   # sampled text (stdout; its "sample: " lines are stderr's): only its prompt is the README's
        p = prompt.group(1)
        out = "\n".join(l for l in out.split("\n") if not l.startswith("sample: "))
        report(body[0].startswith(p) and out.startswith(p), f"line {where}: the sampled text starts with the prompt '{p}'", out)
        return out.rstrip("\n").split("\n")
    got = match_lines(body, out.split("\n"))
    for s, g in zip(body, got):
        if g is None:
            report(False, f"line {where}: the README shows a line the run did not print: {s}", out)
    if all(g is not None for g in got):
        report(True, f"line {where}: the {len(body)} lines shown are the run's (numbers aside)")
    return [g if g is not None else s for s, g in zip(body, got)]

env = dict(os.environ, PATH=os.path.join(work, "bin") + os.pathsep + os.environ["PATH"])
ran = skipped = 0
last = None   # (output, commands) of the block before, when it ran
new = list(lines)
for n, (kind, start, body) in enumerate(blocks, 1):
    if kind == "text":
        if last is not None:
            new[start:start + len(body)] = [None] * len(body)
            new[start] = "\n".join(check_text(body, last[0], last[1], start + 1))
        last = None
        continue
    reason = skip_reason(body)
    if reason:
        print(f"skip block {n} (line {start + 1}): {reason}")
        skipped, last = skipped + 1, None
        continue
    ran += 1
    failed_cmd = os.path.join(work, "failed_command")
    script = f"set -eo pipefail\ntrap 'echo \"$BASH_COMMAND\" > {failed_cmd}' ERR\n" + "\n".join(body) + "\n"
    r = subprocess.run(["bash", "-c", script], cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, errors="replace")
    what = f"block {n} (line {start + 1}), {len([l for l in body if l.strip() and not l.startswith('#')])} command(s)"
    if r.returncode == 0:
        report(True, what + " as written")
    else:
        cmd = open(failed_cmd).read().strip() if os.path.exists(failed_cmd) else "?"
        report(False, f"{what}: exit {r.returncode} at: {cmd}", r.stdout)
    last = (r.stdout, "\n".join(body)) if r.returncode == 0 else None
report(ran > 0, f"the README's sh blocks hold commands ({ran} run, {skipped} skipped)")

# What the commands wrote is ignored by git (no untracked file git would see), and they changed no file of the copy.
new_files = subprocess.run(["git", "-C", repo, "ls-files", "--others", "--exclude-standard"], capture_output=True, text=True)
report(new_files.returncode == 0 and new_files.stdout == "", "the commands wrote only what .gitignore covers", new_files.stdout)
changed = subprocess.run(["git", "-C", repo, "diff", "--name-only"], capture_output=True, text=True)
report(changed.returncode == 0 and changed.stdout == "", "the commands changed no file of the tree", changed.stdout)
if regen:
    with open(regen, "w", encoding="utf-8") as f:
        f.write("\n".join(l for l in new if l is not None))
    print(f"wrote {regen}: the README with this run's output")
with open(os.path.join(work, "counts"), "w") as f:
    f.write(f"{passed} {failed}\n")
PY
read -r p f < "$W/counts" 2>/dev/null || { bad "the block runner did not finish"; p=0 f=0; }
passed=$((passed + p)) failed=$((failed + f))
finish
