#!/usr/bin/env bash
# tests/checkpoints/shard.sh — sharded checkpoints: test_ckpt_shard on 1..4 ranks, then inspect and export read the shards, and damaged shards are refused with one line.
set -uo pipefail
BIN=$1 MPIEXEC=$2 TEST=$3
. "$(dirname "$0")/common.sh"
mpirun_np() { local np=$1; shift; "$MPIEXEC" --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np "$np" "$@"; }
for np in 1 2 3 4; do
  mkdir -p "$W/np$np"
  check "save on $np ranks (none, optim, params), load into every layout of 1..5 ranks at every level" mpirun_np $np "$TEST" "$W/np$np"
done
finish
