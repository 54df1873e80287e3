# tests/harness.sh — sourced by the shell tests' common.sh files: a scratch directory and pass/fail counting.
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
passed=0 failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
finish() { echo "$passed passed, $failed failed"; [[ $failed == 0 ]]; }
