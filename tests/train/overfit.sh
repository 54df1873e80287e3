#!/usr/bin/env bash
# tests/train/overfit.sh — a tiny model must overfit a short repeated text: final loss below 0.1 in a fixed budget.
set -euo pipefail
bin=$1 work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq 400); do printf 'ringgpt trains long context models. '; done > "$work/text.txt"
"$bin" train --data "$work/text.txt" --model tiny --seq-len 64 --batch 8 --steps 150 --lr 1e-2 --min-lr 1e-3 \
  --warmup 10 --weight-decay 0 --val-fraction 0 --log-every 25 --seed 1 --out "$work/out"
loss=$(tail -n 1 "$work/out/metrics.jsonl" | sed 's/.*"loss": \([0-9.e+-]*\).*/\1/')
echo "final loss $loss"
if awk -v l="$loss" 'BEGIN { exit !(l < 0.1) }'; then echo "1 passed, 0 failed"; else echo "FAIL: loss $loss >= 0.1"; echo "0 passed, 1 failed"; exit 1; fi
