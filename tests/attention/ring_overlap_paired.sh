#!/usr/bin/env bash
# tests/attention/ring_overlap_paired.sh — bench/ring_overlap --paired: one line for the overlapped ring and one for the
# serial baseline, each with the critical rank's figures (compute + wait + lag within its slowest wall) and the pairs' saving.
# Usage: ring_overlap_paired.sh MPIEXEC RING_OVERLAP
set -uo pipefail
MPIEXEC=$1 BENCH=$2
passes=0 fails=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; passes=$((passes + 1)); else echo "FAIL $what"; fails=$((fails + 1)); fi; }
out=$("$MPIEXEC" --allow-run-as-root -np 2 -x OMP_NUM_THREADS=1 "$BENCH" --tokens 128 --reps 3 --paired 2>&1)
rc=$?
echo "$out"
check "exit 0 (got $rc)" test "$rc" = 0
on=$(grep -E '^ranks=2 .* overlap=1 paired=1 ' <<< "$out")
off=$(grep -E '^ranks=2 .* overlap=0 paired=1 ' <<< "$out")
check "one line for the overlapped ring and one for the serial baseline" test -n "$on" -a -n "$off"
field() { grep -oE "(^| )$2=[^ ]+" <<< "$1" | cut -d= -f2; }
check "the serial line carries the pairs' saving" test -n "$(field "$off" paired_saved_s)"
check "the overlapped line does not" test -z "$(field "$on" paired_saved_s)"
for line in "$on" "$off"; do
  # Per repetition the critical rank's compute + wait + lag is at most its own wall, so at most the slowest rank's.
  check "critical compute + wait + lag <= the slowest wall ($(field "$line" overlap))" awk -v c="$(field "$line" crit_compute_s)" \
    -v w="$(field "$line" crit_wait_s)" -v l="$(field "$line" crit_lag_s)" -v t="$(field "$line" attn_s)" \
    'BEGIN { exit !(c > 0 && c + w + l <= t * (1 + 1e-9) + 1e-5) }'
  check "reps=3 ($(field "$line" overlap))" test "$(field "$line" reps)" = 3
done
check "the overlapped ring has no lag" test "$(field "$on" crit_lag_s)" = 0.00000
echo "$passes passed, $fails failed"
((fails == 0))
