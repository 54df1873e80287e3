# tests/data/tokenizer_common.sh — shared by the tokenizer tests: a work dir, pass/fail counting, a python3 with HF `tokenizers`.
. "$(dirname "${BASH_SOURCE[0]}")/../harness.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# expect_fail CODE PATTERN CMD...: CMD exits with CODE and its stderr contains PATTERN.
expect_fail() {
  local code=$1 pattern=$2; shift 2
  local err rc=0
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  if [[ $rc == "$code" && $err == *"$pattern"* ]]; then ok "exit $code: $pattern"; else bad "expected exit $code with '$pattern', got $rc: $err"; fi
}
# PYTOK: a python3 that imports `tokenizers` (scripts/deps.sh installs it from PyPI into Debian's python3,
# preferred here for that reason); one pip try if none has it.
find_pytok() {
  PYTOK=""
  for cand in /usr/bin/python3 python3; do
    if command -v "$cand" >/dev/null && "$cand" -c "import tokenizers" 2>/dev/null; then PYTOK=$(command -v "$cand"); return; fi
  done
  local py; py=$(command -v /usr/bin/python3 || command -v python3) || return
  "$py" -m pip install -q --break-system-packages tokenizers >/dev/null 2>&1 || "$py" -m pip install -q tokenizers >/dev/null 2>&1
  "$py" -c "import tokenizers" 2>/dev/null && PYTOK=$py
}
