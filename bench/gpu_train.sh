#!/usr/bin/env bash
# bench/gpu_train.sh — training throughput on one GPU: tokens/s and MFU of the ~125M preset at T=4096 and T=65536.
# usage: bench/gpu_train.sh [RINGGPT] [STEPS]   (PEAK_TFLOPS: the GPU's dense bf16 peak, default 989 = H100/H200 SXM)
# MFU = tokens/s × FLOPs per token (6·matmul params + 6·T·C·layers, as model/gpt.c counts) / peak.
set -euo pipefail
BIN=${1:-build-gpu/ringgpt} STEPS=${2:-12} PEAK=${PEAK_TFLOPS:-989}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# 4 MB of byte-level text: enough tokens for samples of 65537.
awk 'BEGIN { srand(3); for (i = 0; i < 4194304 / 64; i++) { s = ""; for (j = 0; j < 63; j++) s = s sprintf("%c", 97 + int(rand() * 26)); print s } }' > "$W/data.txt"
for T in 4096 65536; do
  B=$(( T >= 65536 ? 1 : 8 ))
  "$BIN" train --device cuda --data "$W/data.txt" --model 125m --seq-len $T --batch $B --steps "$STEPS" --warmup 2 \
    --val-fraction 0 --ckpt-every -1 --log-every 1 --out "$W/t$T" > "$W/t$T.log" 2>&1 || { echo "train T=$T failed:"; tail -5 "$W/t$T.log"; continue; }
  P=$(sed -nE 's/.*model, ([0-9.]+)M parameters.*/\1/p' "$W/t$T.log" | head -1)
  # median tokens/s over the steps after the first two (warm-up: cuBLASLt plans, allocations)
  TPS=$(sed -nE 's/.*"tokens_per_s": ([0-9.e+]+).*/\1/p' "$W/t$T/metrics.jsonl" | tail -n +3 | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  awk -v T=$T -v B=$B -v P="$P" -v tps="$TPS" -v peak="$PEAK" 'BEGIN {
    V = 260; C = 768; L = 12   # the byte-level data sets the vocab (train takes it from the data source)
    fpt = 6 * (P * 1e6 - V * C) + 6 * T * C * L
    printf "train model=125m params=%.1fM T=%d B=%d tokens_per_s=%.0f flops_per_token=%.3e mfu=%.3f (peak %g TFLOP/s)\n", P, T, B, tps, fpt, tps * fpt / (peak * 1e12), peak }'
  grep -E "^device:" "$W/t$T.log" | head -1 || true
done
