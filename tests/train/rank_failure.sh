#!/usr/bin/env bash
# tests/train/rank_failure.sh — a rank that exits, stalls or is killed (SIGKILL, no last word) mid-training ends the whole job
# within the timeout, with a line naming it. A killed rank is named by the launcher when it ends the job itself, and by
# ringgpt's comm deadline when it does not (Open MPI told not to abort: OMPI_MCA_orte_abort_on_non_zero_status=0).
# gather: under --shard params (dp 2 x sp 2) a killed rank leaves the others in a unit's weight gather: the deadline's
# line names the collective.
# Usage: rank_failure.sh RINGGPT MPIEXEC exit|stall|kill|gather
set -uo pipefail
BIN=$1 MPIEXEC=$2 MODE=$3
. "$(dirname "$0")/ring_common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
make_copy_text "$W/data.txt" 200
TIMEOUT=5
hook=2:3   # RINGGPT_DEBUG_EXIT: rank 2 leaves at step 3
[ "$MODE" = stall ] && hook+=:stall
[ "$MODE" = kill ] || [ "$MODE" = gather ] && hook+=:kill
LAYOUT=(--sp 4)
[ "$MODE" = gather ] && LAYOUT=(--sp 2 --shard params --ckpt-every -1)
# The deadline's line for rank 2: the waiting peer says which half of its exchange got nothing.
DEADLINE_NAMES="got no answer within $TIMEOUT s \((nothing arrived from rank 2|rank 2 took nothing)"

# run LABEL: the job with rank 2 leaving at step 3; checks it ended in time, not with 0.
run() {
  local start rc took
  start=$(date +%s)
  RINGGPT_DEBUG_EXIT=$hook mpirun_np 4 "$BIN" train --data "$W/data.txt" --model tiny --seq-len 64 --batch 2 --steps 1000 \
    --threads 1 "${LAYOUT[@]}" --comm-timeout $TIMEOUT --out "$W/run" > "$W/log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  grep -v '^step' "$W/log" | head -20
  rm -rf "$W/run"
  [ $rc -ne 0 ] || { echo "FAIL: $1: the job exited 0 although rank 2 left it"; exit 1; }
  [ $took -le $((TIMEOUT + 25)) ] || { echo "FAIL: $1: the job took ${took}s to end (timeout ${TIMEOUT}s)"; exit 1; }
  echo "ok: $1: rank 2 left the job at step 3 (${MODE}); the job ended in ${took}s with exit code $rc"
}

run "$MODE"
case $MODE in
  exit) grep -q "ringgpt: rank 2: " "$W/log" || { echo "FAIL: no message from rank 2"; exit 1; } ;;
  stall)
    grep -q "ringgpt: rank 2: " "$W/log" || { echo "FAIL: no message from rank 2"; exit 1; }
    grep -qE "$DEADLINE_NAMES" "$W/log" || { echo "FAIL: no timeout message naming rank 2"; exit 1; } ;;
  kill)   # the dead rank says nothing: the line must come from the job
    grep -qE "rank 2\b.*(signal 9|[Kk]illed|died)" "$W/log" || { echo "FAIL: the launcher named no killed rank 2"; exit 1; }
    OMPI_MCA_orte_abort_on_non_zero_status=0 run "kill, the launcher told not to end the job"
    grep -qE "$DEADLINE_NAMES" "$W/log" || { echo "FAIL: no deadline line names the killed rank 2"; exit 1; } ;;
  gather)   # the launcher told not to end the job: the survivors' deadline ends it, naming the gather
    OMPI_MCA_orte_abort_on_non_zero_status=0 run "kill under --shard params, the launcher told not to end the job"
    grep -qE "weight all-gather over 4 ranks did not complete within $TIMEOUT s" "$W/log" ||
      { echo "FAIL: no deadline line names the weight gather"; exit 1; } ;;
esac
