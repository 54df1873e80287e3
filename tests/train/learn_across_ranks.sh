#!/usr/bin/env bash
# tests/train/learn_across_ranks.sh — with sp = 4 a small model learns a copy task whose answers sit in other ranks' chunks.
# Usage: learn_across_ranks.sh RINGGPT MPIEXEC
# Text = blocks of 16 random letters (16-letter alphabet), each followed by its copy. With --seq-len 64 the
# zigzag chunks are 8 tokens and a copied token's source is 16 tokens (2 chunks) back: chunk c copies chunk
# c−2, which is always on another rank (rank of chunk c: c for c < 4, else 7 − c). Attention limited to the
# local chunks cannot predict any target better than chance, ln 16 = 2.77 nats; seeing the source makes
# half the targets predictable, ≈ ln 16 / 2 = 1.39. The test asks for a validation loss below 2.0.
set -euo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/ring_common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
make_copy_text "$W/copy.txt" 1200
mpirun_np 4 "$BIN" train --data "$W/copy.txt" --model tiny --seq-len 64 --batch 8 --steps 300 --lr 3e-3 --warmup 20 \
  --threads 1 --log-every 100 --sp 4 --out "$W/run"
metric_column "$W/run/metrics.jsonl" val_loss | tail -1 | awk '
  { v = $2 }
  END { local = log(16);
        if (v == "" || v >= 2.0) { printf "FAIL: final validation loss %s, not below 2.0 (local-chunk attention floor %.2f)\n", v, local; exit 1 }
        printf "ok: final validation loss %.3f with sp=4, far below the local-chunk floor ln 16 = %.2f\n", v, local }'
