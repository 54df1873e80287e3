#!/usr/bin/env bash
# tests/train/determinism.sh — two runs with the same seed give bit-identical losses (and a third seed differs).
set -euo pipefail
bin=$1 work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq 300); do printf 'Determinism: the same seed must give the same run, step for step. %d\n' "$i"; done > "$work/text.txt"
run() { "$bin" train --data "$work/text.txt" --model tiny --seq-len 96 --batch 3 --grad-accum 2 --steps 12 --seed "$1" \
          --eval-every 4 --threads 2 --out "$work/$2" > /dev/null; grep -o '"loss": [^,]*\|"val_loss": [^,}]*\|"grad_norm": [^,]*' "$work/$2/metrics.jsonl"; }
a=$(run 5 a) b=$(run 5 b) c=$(run 6 c)
if [[ "$a" != "$b" ]]; then echo "FAIL: same seed, different losses"; diff <(echo "$a") <(echo "$b"); echo "0 passed, 1 failed"; exit 1; fi
if [[ "$a" == "$c" ]]; then echo "FAIL: a different seed gave the same losses"; echo "0 passed, 1 failed"; exit 1; fi
echo "$a" | head -4
echo "2 passed, 0 failed"
