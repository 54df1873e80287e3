#!/usr/bin/env bash
# bench/cpu_train.sh — CPU training throughput and peak memory of the `small` model at T = 1024 … 32768.
# usage: bench/cpu_train.sh [ringgpt binary] [T values...]   (defaults: build/ringgpt, 1024 4096 16384 32768)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/ringgpt}
shift || true
lens=("$@")
((${#lens[@]})) || lens=(1024 4096 16384 32768)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Training text: the project's own sources, repeated to well past the longest sequence.
while [[ $(stat -c %s "$work/text.txt" 2>/dev/null || echo 0) -lt 400000 ]]; do
  cat core/*.c model/*.c attention/*.c train/*.c >> "$work/text.txt"
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf "%8s %6s %12s %12s %14s\n" T steps "tokens/s" "ms/step" "peak RSS MB"
for T in "${lens[@]}"; do
  steps=8
  ((T >= 4096)) && steps=3
  ((T >= 16384)) && steps=2
  "$bin" train --data "$work/text.txt" --model small --batch 1 --seq-len "$T" --steps "$steps" --warmup 1 \
    --val-fraction 0 --log-every 1000 --out "$work/out_$T" > /dev/null
  # Steady state: the first step (page faults, thread start-up) is left out when there are more.
  python3 - "$work/out_$T/metrics.jsonl" "$T" "$steps" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
steady = rows[1:] if len(rows) > 1 else rows
ms = sum(r["step_ms"] for r in steady) / len(steady)
T = int(sys.argv[2])
print(f"{T:8d} {int(sys.argv[3]):6d} {T / ms * 1e3:12.0f} {ms:12.1f} {max(r['peak_rss_mb'] for r in rows):14.0f}")
PYEOF
done
