#!/usr/bin/env bash
# bench/gpu_side_by_side.sh — ringgpt against the project's PyTorch reference of the same model on one GPU, in one run.
# usage: bench/gpu_side_by_side.sh [BUILD_DIR] [OUT_DIR]   (env: STEPS=12, PEAK_TFLOPS=989, QUICK=1: T=4096 only)
# Training: 125m at T=4096 B=8 and T=65536 B=1, small at T=1,048,576 B=1 — ringgpt, torch eager, torch.compile
# (bf16 autocast, SDPA, fused AdamW: bench/torch_ref.py): tokens/s, ms/step, peak memory, MFU and the ratios.
# Attention fwd+bwd, causal, bf16: ringgpt's kernels against every SDPA backend (flash, cuDNN, efficient) at
# T = 4K, 16K, 64K, hd 64 and 128. Everything printed as tables and written to OUT_DIR/side_by_side.json.
set -uo pipefail
BUILD=${1:-build} OUT=${2:-side_by_side} STEPS=${STEPS:-12} PEAK=${PEAK_TFLOPS:-989}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
PYTHON=${PYTHON:-python3}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# ---- training --------------------------------------------------------------------------------
# byte-level text with enough tokens for one sample of 1,048,577 (random letters: the FLOPs of any text)
awk 'BEGIN { srand(3); for (i = 0; i < 2200000 / 64; i++) { s = ""; for (j = 0; j < 63; j++) s = s sprintf("%c", 97 + int(rand() * 26)); print s } }' > "$W/data.txt"
CONFIGS="125m:4096:8 125m:65536:1 small:1048576:1"
[ "${QUICK:-0}" = 1 ] && CONFIGS="125m:4096:8"

# median of a metrics.jsonl field over the steps after the first two (warm-up)
median_field() { sed -nE "s/.*\"$2\": ([0-9.e+]+).*/\1/p" "$1" | tail -n +3 | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "nan" }'; }
max_field() { sed -nE "s/.*\"$2\": ([0-9.e+]+).*/\1/p" "$1" | sort -g | tail -1; }

: > "$OUT/train.txt"
for cfg in $CONFIGS; do
  IFS=: read -r model T B <<< "$cfg"
  run="$W/$model-$T"
  if "$BUILD/ringgpt" train --device cuda --data "$W/data.txt" --model "$model" --seq-len "$T" --batch "$B" \
       --steps "$STEPS" --warmup 2 --val-fraction 0 --ckpt-every -1 --log-every 1 --out "$run" > "$run.log" 2>&1; then
    tps=$(median_field "$run/metrics.jsonl" tokens_per_s)
    ms=$(median_field "$run/metrics.jsonl" step_ms)
    mem=$(max_field "$run/metrics.jsonl" device_peak_mb)   # the allocator's high-water mark (MiB)
    P=$(sed -nE 's/.*model, ([0-9.]+)M parameters.*/\1/p' "$run.log" | head -1)
    awk -v m="$model" -v T="$T" -v B="$B" -v P="$P" -v tps="$tps" -v ms="$ms" -v mem="${mem:-nan}" -v peak="$PEAK" 'BEGIN {
      split("tiny 64 2 small 256 4 base 512 8 125m 768 12", p, " ")
      for (i = 1; i < 12; i += 3) if (p[i] == m) { C = p[i + 1]; L = p[i + 2] }
      fpt = 6 * (P * 1e6 - 260 * C) + 6 * T * C * L   # the FLOPs per token bench/torch_ref.py counts
      printf "train impl=ringgpt model=%s T=%d B=%d tokens_per_s=%.0f ms_per_step=%.1f peak_mem_mib=%s mfu=%.3f\n",
             m, T, B, tps, ms, mem, tps * fpt / (peak * 1e12) }' >> "$OUT/train.txt"
  else
    echo "train impl=ringgpt model=$model T=$T B=$B status=failed ($(tail -1 "$run.log"))" >> "$OUT/train.txt"
  fi
  rm -rf "$run"
  for mode in "" --compile; do
    $PYTHON bench/torch_ref.py --model "$model" --seq-len "$T" --batch "$B" --steps "$STEPS" --peak-tflops "$PEAK" $mode \
      >> "$OUT/train.txt" 2> "$W/torch.err" || echo "train impl=torch${mode:+-compile} model=$model T=$T B=$B status=failed ($(tail -1 "$W/torch.err"))" >> "$OUT/train.txt"
  done
done

# ---- attention -------------------------------------------------------------------------------
LENS="4096 16384 65536"
[ "${QUICK:-0}" = 1 ] && LENS=4096
"$BUILD/gpu_attention_bench" $LENS > "$OUT/attention.txt" 2>&1
"$BUILD/gpu_attention_bench" --sm90 $LENS >> "$OUT/attention.txt" 2>&1   # impl=ringgpt-sm90 on an sm_90 GPU
$PYTHON bench/gpu_attention_torch.py $LENS >> "$OUT/attention.txt" 2>&1

# ---- tables, ratios, JSON --------------------------------------------------------------------
$PYTHON - "$OUT" <<'EOF'
import json, sys
out = sys.argv[1]

def rows(path, kind):
    res = []
    for line in open(path):
        if line.startswith(kind + " "):
            res.append(dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv))
    return res

train = rows(f"{out}/train.txt", "train")
attn = rows(f"{out}/attention.txt", "attention")
print("training (tokens/s, ms/step, peak MiB, MFU); ratio = ringgpt / torch.compile")
print(f"{'model':6} {'T':>8} {'B':>2} {'impl':16} {'tok/s':>9} {'ms/step':>9} {'peak MiB':>9} {'MFU':>6}")
by_cfg = {}
for r in train:
    key = (r["model"], r["T"], r["B"])
    by_cfg.setdefault(key, {})[r["impl"]] = r
    print(f"{r['model']:6} {r['T']:>8} {r['B']:>2} {r['impl']:16} {r.get('tokens_per_s', r.get('status', '-')):>9} "
          f"{r.get('ms_per_step', '-'):>9} {r.get('peak_mem_mib', '-'):>9} {r.get('mfu', '-'):>6}")
ratios = []
for key, impls in by_cfg.items():
    ours = impls.get("ringgpt", {})
    for ref in ("torch-eager", "torch-compile"):
        theirs = impls.get(ref, {})
        if "tokens_per_s" in ours and "tokens_per_s" in theirs:
            r = float(ours["tokens_per_s"]) / float(theirs["tokens_per_s"])
            ratios.append({"model": key[0], "T": int(key[1]), "B": int(key[2]), "vs": ref, "tokens_per_s_ratio": r})
            print(f"ratio {key[0]} T={key[1]} B={key[2]}: ringgpt / {ref} tokens/s = {r:.2f}"
                  + ("  (target >= 1.0 vs torch.compile)" if ref == "torch-compile" else ""))
print()
print("attention fwd+bwd TFLOP/s (causal, bf16); ratio = ringgpt / fastest SDPA backend")
best = {}
for r in attn:
    if "fwdbwd_tflops" not in r:
        print(f"  {r['impl']:16} T={r['T']:>6} hd={r['hd']:>3}  {r.get('status', '?')}")
        continue
    key = (int(r["T"]), int(r["hd"]))
    best.setdefault(key, {})[r["impl"]] = float(r["fwdbwd_tflops"])
for key in sorted(best):
    impls = best[key]
    torch_best = max((v, k) for k, v in impls.items() if k.startswith("torch")) if any(k.startswith("torch") for k in impls) else None
    line = "  ".join(f"{k} {v:.0f}" for k, v in sorted(impls.items()))
    mine = max((v for k, v in impls.items() if k.startswith("ringgpt")), default=None)
    extra = f"  ratio {mine / torch_best[0]:.2f} vs {torch_best[1]}" if mine and torch_best else ""
    print(f"  T={key[0]:>6} hd={key[1]:>3}: {line}{extra}")
json.dump({"train": train, "train_ratios": ratios, "attention": attn}, open(f"{out}/side_by_side.json", "w"), indent=1)
print(f"\nwritten: {out}/side_by_side.json, {out}/train.txt, {out}/attention.txt")
EOF
