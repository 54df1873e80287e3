#!/usr/bin/env bash
# scripts/demo.sh — installs what is missing, builds, trains a small long-context model end to end, shows the result.
# The job: passkey retrieval (a 5-digit key hidden at a random depth of 1,000 tokens of filler, asked for at
# the end), trained with ring attention over 2 MPI ranks (each holds half of every sequence), then asked
# for keys it has never seen. DEMO_STEPS (default 300) and DEMO_OUT (default out/demo) change the run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ensure_deps
build_ringgpt
out=${DEMO_OUT:-out/demo}
steps=${DEMO_STEPS:-300}
bin=build/ringgpt
mkdir -p "$out"
rm -rf "$out/passkey" "$out"/step_* "$out/LATEST"

echo "== 1. data: 3000 passkey documents of 1023 tokens (+ <eos>: one document per 1024-token sample)"
"$bin" prepare --synthetic passkey --docs 3000 --doc-len 1023 --depth -1 --seed 1 --val-fraction 0.02 \
  --out "$out/passkey" --quiet
"$bin" inspect --verify "$out/passkey" | tail -n 3

echo "== 2. train: small model (4 layers, dim 256), T=1024, ring attention over 2 ranks (--sp 2), $steps steps"
mpiexec --allow-run-as-root -np 2 -x OMP_NUM_THREADS=1 "$bin" train --sp 2 --data "$out/passkey" --model small \
  --seq-len 1024 --batch 4 --steps "$steps" --lr 2e-3 --min-lr 2e-4 --warmup 30 --eval-every 50 --eval-batches 4 \
  --log-every 10 --threads 1 --out "$out"
"$PY" scripts/plot_metrics.py "$out/metrics.jsonl"

echo "== 3. ask for keys it has never seen (greedy decoding)"
ckpt="$out/$(cat "$out/LATEST")"
"$PY" - "$bin" "$ckpt" <<'PYEOF'
import random, subprocess, sys
binary, ckpt = sys.argv[1], sys.argv[2]
filler = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
rng = random.Random(2024)
right = 0
for trial in range(5):
    key = f"{rng.randrange(10000, 100000)}"
    body = (filler * 12)[:900]
    cut = rng.randrange(0, len(body))
    text = ("There is a pass key hidden in this text. Remember it. " + body[:cut]
            + f"The pass key is {key}. Remember it. " + body[cut:] + "What is the pass key? The pass key is ")
    got = subprocess.run([binary, "sample", ckpt, "--prompt", text, "--tokens", "5", "--temperature", "0"],
                         capture_output=True, text=True, check=True).stdout.strip()[-5:]
    right += got == key
    print(f"  key at depth {cut / len(body):4.0%}: hidden {key}, answered {got!r}  {'right' if got == key else 'wrong'}")
print(f"passkey retrieval: {right}/5 right")
PYEOF

echo "== result"
"$PY" - "$out/metrics.jsonl" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
first, last = rows[0], rows[-1]
val = [r["val_loss"] for r in rows if "val_loss" in r]
print(f"train loss {first['loss']:.3f} -> {last['loss']:.3f} nats/token (uniform guess: 5.561)")
if val: print(f"val loss   {val[0]:.3f} -> {val[-1]:.3f}")
print(f"throughput {sum(r['tokens_per_s'] for r in rows[1:]) / max(1, len(rows) - 1):.0f} tokens/s over 2 ranks, peak RSS per rank {last['peak_rss_mb']:.0f} MB")
PYEOF
echo "plots: $out/loss.png $out/throughput.png; metrics: $out/metrics.jsonl; checkpoint: $ckpt"
