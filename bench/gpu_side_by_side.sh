#!/usr/bin/env bash
# bench/gpu_side_by_side.sh — ringgpt against the project's PyTorch reference of the same model on one GPU: training, attention, memory-bound kernels.
# usage: bench/gpu_side_by_side.sh [BUILD_DIR] [OUT_DIR]
#   env: PARTS="train attention kernels" (any subset; each part writes OUT_DIR/<part>.txt, and every call prints the
#        tables of all parts present, so parts may run in separate calls into one OUT_DIR; APPEND=1 adds to train.txt
#        instead of starting it again), CONFIGS="model:T:B ..." (training shapes), STEPS=12 (STEPS_LONG=4 at T ≥ 1M),
#        PEAK_TFLOPS=989, QUICK=1 (T=4096 only), PYTHON=python3
# Training: 125m at T=4096 B=8 and T=65536 B=1, small at T=1,048,576 B=1, 125m at T=1,048,576 B=1 (fits? with
# --recompute full) — ringgpt's fp32 path (--attn flash --activations fp32: TF32 GEMMs, the default until the
# 2026-11-24 H100 run) and its fast path (--attn cudnn --activations bf16, bf16 GEMMs: the GPU default since), torch eager and torch.compile (bf16 autocast, SDPA, fused AdamW:
# bench/torch_ref.py): tokens/s, ms/step, peak memory, MFU and the ratios against both.
# Attention fwd+bwd, causal, bf16, through ringgpt's block API (merges included): flash, cuDNN (fp32 and bf16
# operands, one causal block and the ring's blocks of 4 ranks replayed on this GPU), sm90 (a build with
# -DRINGGPT_SM90_KERNELS=ON only) — against every SDPA backend at T = 4K, 16K, 64K, hd 64 and 128. Kernels: each
# memory-bound kernel's GB/s against the copy's.
# Everything as tables on stdout and in OUT_DIR/side_by_side.json.
set -uo pipefail
BUILD=${1:-build} OUT=${2:-side_by_side} STEPS=${STEPS:-12} PEAK=${PEAK_TFLOPS:-989} PARTS=${PARTS:-train attention kernels}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
PYTHON=${PYTHON:-python3}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
part() { [[ " $PARTS " == *" $1 "* ]]; }

# ---- training --------------------------------------------------------------------------------
# ringgpt's two paths, both named by their flags: fp32 activations with the flash kernels, and the fast one
# (cuDNN, bf16: the GPU default).
FP32=(--attn flash --activations fp32)
FAST=(--attn cudnn --activations bf16)
CONFIGS=${CONFIGS:-125m:4096:8 125m:65536:1 small:1048576:1 125m:1048576:1}
[ "${QUICK:-0}" = 1 ] && CONFIGS="125m:4096:8"

# median of a metrics.jsonl field over the steps after the warm-up (the first two; the first one of a run of < 6 steps)
median_field() {
  local n skip
  n=$(grep -c . "$1")
  skip=$([ "$n" -ge 6 ] && echo 3 || echo 2)
  sed -nE "s/.*\"$2\": ([0-9.e+]+).*/\1/p" "$1" | tail -n +$skip | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "nan" }'
}
max_field() { sed -nE "s/.*\"$2\": ([0-9.e+]+).*/\1/p" "$1" | sort -g | tail -1; }

# ringgpt_run IMPL MODEL T B STEPS FLAGS...: one training run, one line in train.txt
ringgpt_run() {
  local impl=$1 model=$2 T=$3 B=$4 steps=$5
  shift 5
  local run="$W/$impl-$model-$T"
  if "$BUILD/ringgpt" train --device cuda --data "$W/data.txt" --model "$model" --seq-len "$T" --batch "$B" \
       --steps "$steps" --warmup 2 --val-fraction 0 --ckpt-every -1 --log-every 1 --out "$run" "$@" > "$run.log" 2>&1; then
    local tps ms mem P
    tps=$(median_field "$run/metrics.jsonl" tokens_per_s)
    ms=$(median_field "$run/metrics.jsonl" step_ms)
    mem=$(max_field "$run/metrics.jsonl" device_peak_mb)   # the allocator's high-water mark (MiB)
    P=$(sed -nE 's/.*model, ([0-9.]+)M parameters.*/\1/p' "$run.log" | head -1)
    awk -v impl="$impl" -v m="$model" -v T="$T" -v B="$B" -v P="$P" -v tps="$tps" -v ms="$ms" -v mem="${mem:-nan}" \
        -v peak="$PEAK" -v flags="$*" 'BEGIN {
      split("tiny 64 2 small 256 4 base 512 8 125m 768 12", p, " ")
      for (i = 1; i < 12; i += 3) if (p[i] == m) { C = p[i + 1]; L = p[i + 2] }
      fpt = 6 * (P * 1e6 - 260 * C) + 6 * T * C * L   # the FLOPs per token bench/torch_ref.py counts
      gsub(" ", ",", flags)
      printf "train impl=%s model=%s T=%d B=%d tokens_per_s=%.0f ms_per_step=%.1f peak_mem_mib=%s mfu=%.3f flags=%s\n",
             impl, m, T, B, tps, ms, mem, tps * fpt / (peak * 1e12), flags == "" ? "-" : flags }' >> "$OUT/train.txt"
  else
    echo "train impl=$impl model=$model T=$T B=$B status=failed ($(tail -1 "$run.log" | tr ' ' '_' | cut -c1-120))" >> "$OUT/train.txt"
  fi
  rm -rf "$run"
}

if part train; then
  # byte-level text with enough tokens for one sample of 1,048,577 (random letters: the FLOPs of any text)
  awk 'BEGIN { srand(3); for (i = 0; i < 2200000 / 64; i++) { s = ""; for (j = 0; j < 63; j++) s = s sprintf("%c", 97 + int(rand() * 26)); print s } }' > "$W/data.txt"
  [ "${APPEND:-0}" = 1 ] || : > "$OUT/train.txt"
  for cfg in $CONFIGS; do
    IFS=: read -r model T B <<< "$cfg"
    steps=$STEPS
    [ "$T" -ge 1048576 ] && steps=${STEPS_LONG:-4}   # 2 measured after the 2 warm-up steps
    if [ "$model:$T" = 125m:1048576 ]; then   # the size target: 125m at 1M on one 80 GB GPU, --recompute full
      ringgpt_run ringgpt-fast "$model" "$T" "$B" "$steps" "${FAST[@]}" --recompute full
      continue
    fi
    # the fp32 path at 1M is known (144 s/step on an H100, docs/benchmarks.md): only the fast one runs there
    [ "$T" -lt 1048576 ] && ringgpt_run ringgpt-fp32 "$model" "$T" "$B" "$steps" "${FP32[@]}"
    ringgpt_run ringgpt-fast "$model" "$T" "$B" "$steps" "${FAST[@]}"
    [ "$T" -ge 1048576 ] && ringgpt_run ringgpt-fast-recompute "$model" "$T" "$B" "$steps" "${FAST[@]}" --recompute mlp
    for mode in eager compile; do
      [ $mode = compile ] && [ "$T" -ge 1048576 ] && continue   # the 1M target is against eager
      flag=()
      [ $mode = compile ] && flag=(--compile)
      $PYTHON bench/torch_ref.py --model "$model" --seq-len "$T" --batch "$B" --steps "$steps" --peak-tflops "$PEAK" "${flag[@]}" \
        >> "$OUT/train.txt" 2> "$W/torch.err" ||
        echo "train impl=torch-$mode model=$model T=$T B=$B status=failed ($(tail -1 "$W/torch.err" | tr ' ' '_' | cut -c1-120))" >> "$OUT/train.txt"
    done
  done
fi

# ---- attention -------------------------------------------------------------------------------
if part attention; then
  LENS="4096 16384 65536"
  [ "${QUICK:-0}" = 1 ] && LENS=4096
  : > "$OUT/attention.txt"
  variants=("--attn flash" "--attn cudnn" "--attn cudnn --activations bf16" "--attn cudnn --activations bf16 --ring 4")
  # the Hopper kernels: an experiment outside the default build (docs/gpu.md)
  grep -q '^RINGGPT_SM90_KERNELS:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null &&
    variants+=("--attn sm90" "--attn sm90 --activations bf16")
  for variant in "${variants[@]}"; do
    "$BUILD/gpu_attention_bench" $variant $LENS >> "$OUT/attention.txt" 2>&1 || echo "# gpu_attention_bench $variant failed" >> "$OUT/attention.txt"
  done
  $PYTHON bench/gpu_attention_torch.py $LENS >> "$OUT/attention.txt" 2>&1
fi

# ---- memory-bound kernels --------------------------------------------------------------------
if part kernels; then
  "$BUILD/gpu_kernels_bench" > "$OUT/kernels.txt" 2>&1 || echo "# gpu_kernels_bench failed" >> "$OUT/kernels.txt"
fi

# ---- tables, ratios, targets, JSON -----------------------------------------------------------
$PYTHON - "$OUT" <<'PYEOF'
import json, os, sys
out = sys.argv[1]

def rows(name, kind):
    path, res = f"{out}/{name}.txt", []
    if os.path.exists(path):
        for line in open(path):
            if line.startswith(kind + " "):
                res.append(dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv))
    return res

train, attn, kern = rows("train", "train"), rows("attention", "attention"), rows("kernels", "kernel")
verdicts = []

def target(what, ok):
    verdicts.append({"target": what, "met": ok})
    print(f"  target: {what}: {'MET' if ok else 'not met' if ok is not None else 'not measured'}")

def f(r, k):
    try:
        return float(r[k])
    except (KeyError, ValueError):
        return None

if train:
    print("training (tokens/s, ms/step, peak MiB, MFU)")
    print(f"{'model':6} {'T':>8} {'B':>2} {'impl':24} {'tok/s':>9} {'ms/step':>9} {'peak MiB':>9} {'MFU':>6}  flags")
    by = {}
    for r in train:
        by.setdefault((r["model"], int(r["T"]), int(r["B"])), {})[r["impl"]] = r
        print(f"{r['model']:6} {r['T']:>8} {r['B']:>2} {r['impl']:24} {r.get('tokens_per_s', r.get('status', '-')):>9} "
              f"{r.get('ms_per_step', '-'):>9} {r.get('peak_mem_mib', '-'):>9} {r.get('mfu', '-'):>6}  {r.get('flags', '')}")
    ratios = []
    for (m, T, B), impls in by.items():
        for ours in [k for k in impls if k.startswith("ringgpt")]:
            for ref in ("torch-eager", "torch-compile"):
                a, b = f(impls[ours], "tokens_per_s"), f(impls.get(ref, {}), "tokens_per_s")
                if a and b:
                    ratios.append({"model": m, "T": T, "B": B, "impl": ours, "vs": ref, "tokens_per_s_ratio": a / b})
                    print(f"ratio {m} T={T} B={B}: {ours} / {ref} tokens/s = {a / b:.2f}")
    best = lambda m, T, k: max((f(r, k) or 0 for i, r in by.get((m, T, 1 if T > 4096 else 8), {}).items() if i.startswith("ringgpt")), default=None)
    ref = lambda m, T, i: f(by.get((m, T, 1 if T > 4096 else 8), {}).get(i, {}), "tokens_per_s")
    for T in (4096, 65536):
        a, b = best("125m", T, "tokens_per_s"), ref("125m", T, "torch-compile")
        target(f"125m T={T}: ringgpt >= 1.0x torch.compile", a / b >= 1.0 if a and b else None)
    mfu = best("125m", 65536, "mfu")
    target("125m T=65536: MFU >= 35 %", mfu >= 0.35 if mfu else None)
    small = by.get(("small", 1048576, 1), {})
    fits = [r for i, r in small.items() if i.startswith("ringgpt") and f(r, "peak_mem_mib") and f(r, "peak_mem_mib") <= 40e3 / 1.048576]
    eager = ref("small", 1048576, "torch-eager")
    fast = max((f(r, "tokens_per_s") for r in fits), default=None)
    target("small T=1M: <= 40 GB and >= 1.2x PyTorch eager", fast / eager >= 1.2 if fast and eager else None if not small else False)
    big = by.get(("125m", 1048576, 1), {}).get("ringgpt-fast")
    target("125m T=1M fits one 80 GB GPU with --recompute full", ("tokens_per_s" in big) if big else None)
else:
    ratios = []

if attn:
    print()
    print("attention fwd+bwd TFLOP/s (causal, bf16 math); ratio = ringgpt's best / SDPA-cuDNN")
    tab = {}
    for r in attn:
        if "fwdbwd_tflops" not in r:
            print(f"  {r.get('impl', '?'):28} T={r.get('T', '?'):>6} hd={r.get('hd', '?'):>3}  {r.get('status', '?')}")
            continue
        tab.setdefault((int(r["T"]), int(r["hd"])), {})[r["impl"]] = float(r["fwdbwd_tflops"])
    for key in sorted(tab):
        impls = tab[key]
        line = "  ".join(f"{k} {v:.0f}" for k, v in sorted(impls.items()))
        mine = max((v for k, v in impls.items() if k.startswith("ringgpt")), default=None)
        cud = impls.get("torch-cudnn")
        extra = f"  ratio {mine / cud:.2f} vs torch-cudnn" if mine and cud else ""
        print(f"  T={key[0]:>6} hd={key[1]:>3}: {line}{extra}")
        if key[0] >= 16384:
            target(f"attention T={key[0]} hd={key[1]}: block API >= 0.9x SDPA-cuDNN", mine / cud >= 0.9 if mine and cud else None)

if kern:
    print()
    print("memory-bound kernels: GB/s and the ratio to the device-to-device copy (target >= 0.8)")
    for r in kern:
        print(f"  {r['name']:28} {r['store']:5} {float(r['gbps']):8.1f} GB/s  ratio {float(r['ratio']):.2f}")
    low = [r for r in kern if r["name"] != "copy" and float(r["ratio"]) < 0.8]
    target("every memory-bound kernel >= 0.8x copy bandwidth", not low)
    for r in low:
        print(f"    below: {r['name']} ({r['store']}) {float(r['ratio']):.2f}")

json.dump({"train": train, "train_ratios": ratios, "attention": attn, "kernels": kern, "targets": verdicts},
          open(f"{out}/side_by_side.json", "w"), indent=1)
print(f"\nwritten: {out}/side_by_side.json and the part files {out}/{{train,attention,kernels}}.txt")
PYEOF
