#!/usr/bin/env bash
# tests/train/rank_failure.sh — a rank that exits, stalls or is killed (SIGKILL, no last word) mid-training ends the whole job
# within the timeout, with a line naming it.
# Usage: rank_failure.sh RINGGPT MPIEXEC exit|stall|kill
set -uo pipefail
BIN=$1 MPIEXEC=$2 MODE=$3
. "$(dirname "$0")/ring_common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
make_copy_text "$W/data.txt" 200
TIMEOUT=5
flags=(--debug-exit-rank 2 --debug-exit-step 3)
[ "$MODE" = stall ] && flags+=(--debug-stall)
[ "$MODE" = kill ] && flags+=(--debug-kill)
start=$(date +%s)
mpirun_np 4 "$BIN" train --data "$W/data.txt" --model tiny --seq-len 64 --batch 2 --steps 1000 --threads 1 --sp 4 \
  --comm-timeout $TIMEOUT --out "$W/run" "${flags[@]}" > "$W/log" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
cat "$W/log" | grep -v '^step' | head -20
[ $rc -ne 0 ] || { echo "FAIL: the job exited 0 although rank 2 left it"; exit 1; }
[ $took -le $((TIMEOUT + 25)) ] || { echo "FAIL: the job took ${took}s to end (timeout ${TIMEOUT}s)"; exit 1; }
if [ "$MODE" = kill ]; then   # the dead rank says nothing: the line must come from the job
  grep -qE "rank 2\b.*(signal 9|[Kk]illed|died)" "$W/log" || { echo "FAIL: no line names the killed rank 2"; exit 1; }
else
  grep -q "ringgpt: rank 2: " "$W/log" || { echo "FAIL: no message from rank 2"; exit 1; }
fi
if [ "$MODE" = stall ]; then
  grep -q "got no answer within $TIMEOUT s" "$W/log" || { echo "FAIL: no timeout message naming the peers"; exit 1; }
fi
echo "ok: rank 2 left the job at step 3 (${MODE}); the job ended in ${took}s with exit code $rc"
