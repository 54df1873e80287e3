#!/usr/bin/env bash
# tests/cli/readme_commands.sh — every command the README shows runs: each ```sh block, in order, in a scratch directory.
#
# The commands run in an empty scratch directory (the quick start reads /usr/share/common-licenses, which every
# Debian has; no command reads docs/) with a bin/ that comes first in PATH: `ringgpt` is the built binary, `mpiexec`
# the given one with --allow-run-as-root --oversubscribe (the tests run as root on 2 cores). Skipped, and counted: the block naming scripts/demo.sh and scripts/test.sh (they build and run
# this test), and blocks whose first line is "# (build)", "# (GPU)" or "# (Slurm)". A ```text block is output, never
# run. Also checked: the README names both scripts in its first lines and stays within 300 lines.
# usage: readme_commands.sh RINGGPT MPIEXEC
set -uo pipefail
BIN=$1 MPIEXEC=${2:-mpiexec}
. "$(dirname "$0")/common.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
README=$ROOT/README.md

# -- the README's shape
check "README names scripts/demo.sh and scripts/test.sh in its first 15 lines" \
  bash -c "head -15 '$README' | grep -q '^scripts/demo.sh' && head -15 '$README' | grep -q '^scripts/test.sh'"
check "README is at most 300 lines ($(wc -l < "$README"))" test "$(wc -l < "$README")" -le 300

# -- the commands: one logical line per command (a trailing backslash joins lines), comments dropped
mpi=$(command -v "$MPIEXEC") || { bad "no mpiexec ($MPIEXEC): the README's multi-rank commands cannot run"; finish; exit; }
mkdir -p "$W/bin" "$W/run"
ln -s "$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")" "$W/bin/ringgpt"
printf '#!/bin/sh\nexec "%s" --allow-run-as-root --oversubscribe "$@"\n' "$mpi" > "$W/bin/mpiexec"
chmod +x "$W/bin/mpiexec"
awk -v out="$W/cmds" '
  /^```sh[ \t]*$/ { inblock = 1; first = 1; skip = 0; block++; next }
  /^```/ && inblock { inblock = 0; next }
  !inblock { next }
  first { first = 0; if ($0 ~ /^# \((build|GPU|Slurm)\)/) { skip = 1; sub(/^# /, ""); print "SKIP " block " " $0 > out; next } }
  skip { next }
  /^[ \t]*(#|$)/ { next }
  /^scripts\/(demo|test)\.sh/ { print "SKIP " block " " $1 " (runs the build and this test)" > out; next }
  { line = line $0; if (line ~ /\\$/) { sub(/\\$/, " ", line); next } print "RUN " block " " line > out; line = "" }
' "$README"
check "no README command reads docs/ (the docs are not a product input)" \
  bash -c "! grep '^RUN' '$W/cmds' | grep -qE '(^| )\\.?/?docs(/| |\$)'"
ran=0 skipped=0
while IFS= read -r entry; do
  kind=${entry%% *} rest=${entry#* }
  block=${rest%% *} cmd=${rest#* }
  if [[ $kind == SKIP ]]; then echo "skip block $block: $cmd"; skipped=$((skipped + 1)); continue; fi
  ran=$((ran + 1))
  rc=0
  out=$(cd "$W/run" && PATH="$W/bin:$PATH" bash -c "$cmd" 2>&1 < /dev/null) || rc=$?
  if [[ $rc == 0 ]]; then ok "block $block: $cmd"
  else bad "block $block, exit $rc: $cmd"; printf '%s\n' "$out" | tail -15 | sed 's/^/    /'; fi
done < "$W/cmds"
check "the README's sh blocks hold commands ($ran run, $skipped skipped)" test "$ran" -gt 0
finish
