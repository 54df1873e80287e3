# tests/checkpoints/common.sh — shared by the checkpoint shell tests: test text, a python with numpy, pass/fail counting.
. "$(dirname "${BASH_SOURCE[0]}")/../harness.sh"

make_text() {
  for i in $(seq "${2:-300}"); do printf 'Checkpoint test line %d: the quick brown fox jumps over the lazy dog %d times.\n' "$i" $((i * 7 % 13)); done > "$1"
}
# The losses (and val losses) column of a metrics.jsonl, one "step loss" per line.
losses() { sed -nE 's/.*"step": ([0-9]+), "loss": ([-0-9.e]+).*/\1 \2/p' "$1"; }
# A python3 with numpy (Debian's has it).
PYNP=""
for cand in python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null && "$cand" -c "import numpy" 2>/dev/null; then PYNP=$(command -v "$cand"); break; fi
done
# expect_fail CODE PATTERN CMD...: CMD exits with CODE and its stderr contains PATTERN.
expect_fail() {
  local code=$1 pattern=$2; shift 2
  local err rc=0
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  if [[ $rc == "$code" && $err == *"$pattern"* ]]; then ok "exit $code: $pattern"; else bad "expected exit $code with '$pattern', got $rc: $err"; fi
}
