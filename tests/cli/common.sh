# tests/cli/common.sh — shared by the CLI tests: a scratch directory, test text, pass/fail counting, exit-code checks.
. "$(dirname "${BASH_SOURCE[0]}")/../harness.sh"
make_text() {
  for i in $(seq "${2:-300}"); do printf 'CLI test line %d: the quick brown fox jumps over the lazy dog %d times.\n' "$i" $((i * 7 % 13)); done > "$1"
}
# expect_fail CODE PATTERN CMD...: CMD exits with CODE, and its stderr is one line that contains PATTERN.
expect_fail() {
  local code=$1 pattern=$2; shift 2
  local err rc=0
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  local lines; lines=$(printf '%s\n' "$err" | grep -c .)
  if [[ $rc == "$code" && $err == *"$pattern"* && $lines == 1 ]]; then ok "exit $code: $pattern"
  else bad "expected exit $code with one line containing '$pattern', got $rc: $err"; fi
}
