#!/usr/bin/env bash
# scripts/demo.sh — installs what is missing, builds, trains a small long-context model end to end, shows the result.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ensure_deps
build_ringgpt
out=${DEMO_OUT:-out/demo}
steps=${DEMO_STEPS:-300}
mkdir -p "$out"
# The corpus: this repository's own C sources and docs (no download), ~0.3 MB of text.
cat $(git ls-files '*.c' '*.h' '*.md' 2>/dev/null || ls core/*.[ch] model/*.[ch] attention/*.[ch] train/*.[ch]) > "$out/corpus.txt"
echo "== training the small model (4 layers, dim 256) on $(wc -c < "$out/corpus.txt") bytes, T=2048, $steps steps"
build/ringgpt train --data "$out/corpus.txt" --model small --seq-len 2048 --batch 1 --steps "$steps" \
  --lr 2e-3 --min-lr 2e-4 --warmup 20 --eval-every 50 --eval-batches 2 --log-every 10 --out "$out"
"$PY" scripts/plot_metrics.py "$out/metrics.jsonl"
echo "== result"
"$PY" - "$out/metrics.jsonl" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
first, last = rows[0], rows[-1]
val = [r["val_loss"] for r in rows if "val_loss" in r]
print(f"train loss {first['loss']:.3f} -> {last['loss']:.3f} nats/token (uniform guess: 5.561)")
if val: print(f"val loss   {val[0]:.3f} -> {val[-1]:.3f}")
print(f"throughput {sum(r['tokens_per_s'] for r in rows[1:]) / max(1, len(rows) - 1):.0f} tokens/s, peak RSS {last['peak_rss_mb']:.0f} MB")
PYEOF
echo "plots: $out/loss.png $out/throughput.png; metrics: $out/metrics.jsonl"
