#!/usr/bin/env bash
# bench/memory.sh — memory per rank: the plan's longest T per preset and --recompute mode, measured peak per rank for sp ∈ {1,2,4,8}, and the `small` T=65536 targets.
# usage: bench/memory.sh [BUILD_DIR] [BUDGET_MIB] [RING_T] [BIG_T]     (defaults: build 16384 16384 65536; BIG_T=0 skips)
# Prints markdown tables with the targets and writes every figure to memory.json (or $JSON). Figures
# are peak RSS (getrusage) on this machine's CPU; the load average is printed next to each timed part.
set -euo pipefail
BUILD=${1:-build} BUDGET=${2:-16384} RING_T=${3:-16384} BIG_T=${4:-65536}
SPS=${SPS:-1 2 4 8} JSON=${JSON:-memory.json}
for p in memory_plan ring_bench ringgpt; do
  [ -x "$BUILD/$p" ] || { echo "memory.sh: $BUILD/$p not found; build first (cmake --build $BUILD)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
field() { sed -nE "s/.*[ ]$1=([-0-9.a-z]+).*/\1/p" <<< "$2"; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/ {print $2}') GiB; load $(load)"
records=()

# 1. The plan: longest T per preset and mode within BUDGET MiB per rank (B=1), and per sp for `small`.
"$BUILD/memory_plan" --budget-mib "$BUDGET" > "$work/plan.jsonl"
python3 - "$work/plan.jsonl" "$BUDGET" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"\n## Longest T per rank budget of {float(sys.argv[2]):.0f} MiB (memory plan, B=1, sp=1)\n")
print("| preset | none | mlp | full | full / none | kept bytes/token/layer (none → full) |")
print("|---|---|---|---|---|---|")
for p in ["tiny", "small", "base", "125m"]:
    r = {x["recompute"]: x for x in rows if x["preset"] == p and x["sp"] == 1}
    print(f"| {p} | {r['none']['max_seq_len']:,} | {r['mlp']['max_seq_len']:,} | {r['full']['max_seq_len']:,} | "
          f"{r['full']['max_seq_len'] / r['none']['max_seq_len']:.2f}× | {r['none']['kept_bytes_per_token_layer']} → {r['full']['kept_bytes_per_token_layer']} |")
print(f"\n## small: longest T by ring size (memory plan, {float(sys.argv[2]):.0f} MiB per rank)\n")
print("| sp | none | mlp | full |")
print("|---|---|---|---|")
for sp in [1, 2, 4, 8]:
    r = {x["recompute"]: x for x in rows if x["preset"] == "small" and x["sp"] == sp}
    print(f"| {sp} | {r['none']['max_seq_len']:,} | {r['mlp']['max_seq_len']:,} | {r['full']['max_seq_len']:,} |")
PY

# 1b. The plan's longest T checked by running it: ringgpt refuses a too-long T under --mem-budget VERIFY_MIB,
# names the longest that fits, and one step at that T must peak within the budget.
VERIFY_MIB=${VERIFY_MIB:-200}
vtext=$work/verify.txt
while [[ $(stat -c %s "$vtext" 2>/dev/null || echo 0) -lt 400000 ]]; do cat "$(dirname "$0")"/../model/*.c >> "$vtext"; done
echo
echo "## Longest T at --mem-budget $VERIFY_MIB MiB, small, checked by one step"
echo
echo "| --recompute | longest T (plan) | predicted (MiB) | measured peak RSS (MiB) | measured / budget | load |"
echo "|---|---|---|---|---|---|"
for mode in none mlp full; do
  msg=$("$BUILD/ringgpt" train --data "$vtext" --model small --batch 1 --seq-len 200000 --recompute $mode \
        --mem-budget "$VERIFY_MIB" --val-fraction 0 --out "$work/v" 2>&1 >/dev/null || true)
  T=$(sed -nE 's/.*--seq-len ([0-9]+) or shorter.*/\1/p' <<< "$msg")
  [[ -n $T ]] || { echo "memory.sh: no longest T in: $msg" >&2; exit 1; }
  l0=$(load)
  "$BUILD/ringgpt" train --data "$vtext" --model small --batch 1 --seq-len "$T" --steps 1 --warmup 1 --val-fraction 0 \
    --ckpt-every -1 --recompute $mode --out "$work/v_$mode" > "$work/v_$mode.log" 2>&1   # no --mem-budget: measure
  m=$(grep '^memory:' "$work/v_$mode.log")
  meas=$(sed -nE 's/.*measured ([0-9.]+) MiB.*/\1/p' <<< "$m") pred=$(sed -nE 's/.*predicted peak ([0-9.]+) MiB.*/\1/p' <<< "$m")
  echo "| $mode | $T | $pred | $meas | $(awk -v a="$meas" -v b="$VERIFY_MIB" 'BEGIN { printf "%.3f", a / b }') | $l0 |"
  records+=("{\"part\": \"verify\", \"recompute\": \"$mode\", \"budget_mib\": $VERIFY_MIB, \"seq_len\": $T, \"predicted_mib\": $pred, \"peak_rss_mib\": $meas}")
done

# 2. Measured per rank beyond the model (weights, grads, AdamW, libraries) at a fixed T, ring_bench's model.
echo
echo "## Peak per rank beyond the model, T=$RING_T (ring_bench: 2 layers, dim 64, 4/2 heads, one thread per rank; measured vs plan)"
echo
echo "| --recompute | sp | beyond model (MiB) | plan (MiB) | vs sp=1 | step (s) | ring exchanges | load |"
echo "|---|---|---|---|---|---|---|---|"
declare -A act
for mode in none full; do
  for sp in $SPS; do
    threads=1   # like for like: a second thread would add its own OpenBLAS work buffer to sp=1 only
    l0=$(load)
    line=$(mpiexec --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=$threads -np "$sp" "$BUILD/ring_bench" \
           --seq-len "$RING_T" --steps 1 --recompute $mode)
    act[$mode.$sp]=$(field act_peak_mb "$line")
    ratio=$(awk -v a="${act[$mode.$sp]}" -v b="${act[$mode.1]}" 'BEGIN { printf "%.3f", a / b }')
    echo "| $mode | $sp | ${act[$mode.$sp]} | $(field plan_act_mb "$line") | ${ratio}× | $(field step_s "$line") | $(field exchanges "$line") | $l0 |"
    records+=("{\"part\": \"ring\", \"recompute\": \"$mode\", \"sp\": $sp, \"seq_len\": $RING_T, \"beyond_model_mib\": ${act[$mode.$sp]}, \"plan_mib\": $(field plan_act_mb "$line"), \"vs_sp1\": $ratio, \"step_s\": $(field step_s "$line"), \"load\": \"$l0\"}")
  done
  if [[ " $SPS " == *" 4 "* ]]; then
    r=$(awk -v a="${act[$mode.4]}" -v b="${act[$mode.1]}" 'BEGIN { printf "%.3f", a / b }')
    ok=$(awk -v r="$r" 'BEGIN { print (r <= 0.30 ? "met" : "NOT met") }')
    echo "target ($mode): sp=4 ≤ 0.30× of sp=1 beyond the weights: ${r}× — $ok" >&2
    records+=("{\"part\": \"target\", \"what\": \"sp4/sp1 beyond the weights, --recompute $mode\", \"value\": $r, \"limit\": 0.30}")
  fi
done

# 3. small at BIG_T through the binary: none vs full, one step each (the first step: page faults included in both).
if [[ $BIG_T -gt 0 ]]; then
  while [[ $(stat -c %s "$work/text.txt" 2>/dev/null || echo 0) -lt $((BIG_T * 2)) ]]; do
    cat "$(dirname "$0")"/../model/*.c "$(dirname "$0")"/../attention/*.c >> "$work/text.txt"
  done
  echo
  echo "## small, T=$BIG_T, B=1, one step through \`ringgpt train\`"
  echo
  echo "| --recompute | peak RSS (MiB) | predicted (MiB) | prediction | step (s) | load before / after |"
  echo "|---|---|---|---|---|---|"
  declare -A rss ms
  for mode in none full; do
    l0=$(load)
    "$BUILD/ringgpt" train --data "$work/text.txt" --model small --batch 1 --seq-len "$BIG_T" --steps 1 --warmup 1 \
      --val-fraction 0 --ckpt-every -1 --recompute $mode --out "$work/big_$mode" > "$work/big_$mode.log" 2>&1
    m=$(grep '^memory:' "$work/big_$mode.log")
    rss[$mode]=$(sed -nE 's/.*measured ([0-9.]+) MiB.*/\1/p' <<< "$m")
    pred=$(sed -nE 's/.*predicted peak ([0-9.]+) MiB.*/\1/p' <<< "$m")
    err=$(sed -nE 's/.*prediction ([-+0-9.]+%).*/\1/p' <<< "$m")
    ms[$mode]=$(sed -nE 's/.*"step_ms": ([0-9.]+).*/\1/p' "$work/big_$mode/metrics.jsonl" | tail -1)
    echo "| $mode | ${rss[$mode]} | $pred | $err | $(awk -v m="${ms[$mode]}" 'BEGIN { printf "%.1f", m / 1000 }') | $l0 / $(load) |"
    records+=("{\"part\": \"big\", \"recompute\": \"$mode\", \"seq_len\": $BIG_T, \"peak_rss_mib\": ${rss[$mode]}, \"predicted_mib\": $pred, \"step_ms\": ${ms[$mode]}, \"load_before\": \"$l0\"}")
  done
  mr=$(awk -v a="${rss[full]}" -v b="${rss[none]}" 'BEGIN { printf "%.3f", a / b }')
  tr=$(awk -v a="${ms[full]}" -v b="${ms[none]}" 'BEGIN { printf "%.3f", a / b }')
  echo
  echo "target: peak RSS full/none ≤ 0.35: ${mr} — $(awk -v r="$mr" 'BEGIN { print (r <= 0.35 ? "met" : "NOT met") }')"
  echo "target: step time full/none ≤ 1.35: ${tr} — $(awk -v r="$tr" 'BEGIN { print (r <= 1.35 ? "met" : "NOT met") }') (shared machine: see the load)"
  records+=("{\"part\": \"target\", \"what\": \"small T=$BIG_T peak RSS full/none\", \"value\": $mr, \"limit\": 0.35}")
  records+=("{\"part\": \"target\", \"what\": \"small T=$BIG_T step time full/none\", \"value\": $tr, \"limit\": 1.35}")
fi
{ echo "["; sed 's/^/  /' "$work/plan.jsonl" | sed 's/$/,/'; printf '  %s,\n' "${records[@]}" | sed '$ s/,$//'; echo "]"; } > "$JSON"
echo
echo "wrote $JSON"
