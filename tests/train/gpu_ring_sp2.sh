#!/usr/bin/env bash
# tests/train/gpu_ring_sp2.sh — ring attention on one GPU: two ranks (MPI with host staging) give the loss curve of one rank.
# Usage: ring_sp2.sh RINGGPT MPIEXEC PROBE   (PROBE: a GPU test binary; `PROBE --probe` fails without a GPU)
set -euo pipefail
BIN=$1 MPIEXEC=$2 PROBE=$3
. "$(dirname "$0")/ring_common.sh"
gpu_workdir "$PROBE" "ring_sp2"
make_copy_text "$W/data.txt" 400
COMMON=(train --device cuda --data "$W/data.txt" --model tiny --dim 128 --heads 4 --kv-heads 2 --seq-len 256
        --batch 2 --steps 20 --lr 3e-3 --warmup 5 --threads 1 --eval-every 10 --eval-batches 2 --ckpt-every -1)
"$BIN" "${COMMON[@]}" --out "$W/sp1" > /dev/null
# Two ranks share the one GPU: NCCL refuses that, so the ring goes through MPI with host staging.
mpirun_np 2 "$BIN" "${COMMON[@]}" --sp 2 --out "$W/sp2" > /dev/null
status=0
for key in loss val_loss; do
  paste -d' ' <(metric_column "$W/sp1/metrics.jsonl" $key) <(metric_column "$W/sp2/metrics.jsonl" $key) | awk -v k=$key '
    { n++; d = $2 - $4; if (d < 0) d = -d; if ($1 != $3) bad = 1; if (d > worst) worst = d }
    END { if (n == 0 || bad || worst > 1e-2) { printf "FAIL sp=2 on one GPU: %s differs from sp=1 by %.2e over %d steps\n", k, worst, n; exit 1 }
          printf "ok   sp=2 on one GPU: %s within %.2e of sp=1 over %d steps\n", k, worst, n }' || status=1
done
exit $status
