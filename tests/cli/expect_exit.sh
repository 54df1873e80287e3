#!/usr/bin/env bash
# tests/cli/expect_exit.sh — runs a command and checks its exit code and that stderr says what went wrong.
# usage: expect_exit.sh CODE PATTERN -- command args...
set -u
want=$1 pattern=$2
shift 3
err=$(mktemp)
"$@" >/dev/null 2>"$err"
got=$?
msg=$(cat "$err")
rm -f "$err"
lines=$(printf '%s\n' "$msg" | grep -c . || true)
if [[ $got -ne $want ]]; then
  echo "FAIL: exit code $got, expected $want: $*"; echo "stderr: $msg"; echo "0 passed, 1 failed"; exit 1
fi
if ! grep -q -- "$pattern" <<<"$msg"; then
  echo "FAIL: stderr does not mention '$pattern': $msg"; echo "0 passed, 1 failed"; exit 1
fi
if [[ $lines -ne 1 ]]; then
  echo "FAIL: expected one line on stderr, got $lines: $msg"; echo "0 passed, 1 failed"; exit 1
fi
echo "ok: exit $got: $msg"
echo "1 passed, 0 failed"
