#!/usr/bin/env bash
# tests/train/loss_curve.sh — 20 steps through the binary: the loss curve of every dp×sp layout equals one rank's (1e-4).
# Usage: loss_curve.sh RINGGPT MPIEXEC
set -euo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/ring_common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
make_copy_text "$W/data.txt" 400
COMMON=(train --data "$W/data.txt" --model tiny --heads 4 --kv-heads 2 --seq-len 96 --steps 20 --lr 3e-3 --warmup 5
        --threads 1 --eval-every 10 --eval-batches 2)

# compare REF RUN: every step's loss (and val_loss) within 1e-4
compare() {
  for key in loss val_loss; do
    paste -d' ' <(metric_column "$1" $key) <(metric_column "$2" $key) | awk -v k=$key -v name="$3" '
      { n++; d = $2 - $4; if (d < 0) d = -d; if ($1 != $3) bad = 1; if (d > worst) worst = d }
      END { if (n == 0 || bad || worst > 1e-4) { printf "FAIL %s: %s differs from one rank by %.2e over %d steps\n", name, k, worst, n; exit 1 }
            printf "ok   %s: %s within %.2e of one rank over %d steps\n", name, k, worst, n }'
  done
}

OMP_NUM_THREADS=1 "$BIN" "${COMMON[@]}" --batch 2 --out "$W/ref_b2" > /dev/null
OMP_NUM_THREADS=1 "$BIN" "${COMMON[@]}" --batch 4 --out "$W/ref_b4" > /dev/null
status=0
for layout in "2 2" "3 3" "4 4"; do
  set -- $layout
  mpirun_np "$1" "$BIN" "${COMMON[@]}" --batch 2 --sp "$2" --out "$W/sp$2" > /dev/null
  compare "$W/ref_b2/metrics.jsonl" "$W/sp$2/metrics.jsonl" "dp=1 sp=$2" || status=1
done
# dp = 2: each of the two rings takes 2 of the 4 global samples a one-rank --batch 4 step sees.
mpirun_np 4 "$BIN" "${COMMON[@]}" --batch 2 --sp 2 --out "$W/dp2sp2" > /dev/null
compare "$W/ref_b4/metrics.jsonl" "$W/dp2sp2/metrics.jsonl" "dp=2 sp=2" || status=1
exit $status
