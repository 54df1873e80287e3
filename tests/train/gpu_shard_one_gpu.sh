#!/usr/bin/env bash
# tests/train/gpu_shard_one_gpu.sh — train --shard on one GPU: two ranks (MPI with host staging: NCCL refuses two ranks on
# one device) at every shard level give the loss curve of the same two ranks unsharded.
# Usage: gpu_shard_one_gpu.sh RINGGPT MPIEXEC PROBE   (PROBE: a GPU test binary; `PROBE --probe` fails without a GPU)
set -euo pipefail
BIN=$1 MPIEXEC=$2 PROBE=$3
. "$(dirname "$0")/ring_common.sh"
gpu_workdir "$PROBE" "shard on one GPU"
make_copy_text "$W/data.txt" 400
COMMON=(train --device cuda --data "$W/data.txt" --model tiny --dim 128 --heads 4 --kv-heads 2 --layers 3 --seq-len 256
        --batch 2 --steps 20 --lr 3e-3 --warmup 5 --threads 1 --eval-every 10 --eval-batches 2 --ckpt-every -1)
mpirun_np 2 "$BIN" "${COMMON[@]}" --shard none --out "$W/none" > /dev/null
status=0
for level in optim grads params; do
  mpirun_np 2 "$BIN" "${COMMON[@]}" --shard $level --out "$W/$level" > "$W/$level.log" 2>&1 || { tail -5 "$W/$level.log"; exit 1; }
  # The sums of a reduce-scatter and of an all-reduce may take the ranks in another order: equal within 1e-3 over the run.
  for key in loss val_loss; do
    paste -d' ' <(metric_column "$W/none/metrics.jsonl" $key) <(metric_column "$W/$level/metrics.jsonl" $key) | awk -v k=$key -v l=$level '
      { n++; d = $2 - $4; if (d < 0) d = -d; if ($1 != $3) bad = 1; if (d > worst) worst = d }
      END { if (n == 0 || bad || worst > 1e-3) { printf "FAIL --shard %s on one GPU: %s differs from none by %.2e over %d steps\n", l, k, worst, n; exit 1 }
            printf "ok   --shard %s on one GPU: %s within %.2e of none over %d steps\n", l, k, worst, n }' || status=1
  done
done
exit $status
