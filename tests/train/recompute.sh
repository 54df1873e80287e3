#!/usr/bin/env bash
# tests/train/recompute.sh — --recompute through the binary: every mode trains the same losses, and a run resumes across modes byte for byte.
# usage: recompute.sh RINGGPT_BIN
set -uo pipefail
BIN=$1
. "$(dirname "$0")/../checkpoints/common.sh"
make_text "$W/text.txt" 300
K=3
run() {  # run OUT [extra flags]
  local out=$1; shift
  "$BIN" train --data "$W/text.txt" --model tiny --seq-len 48 --batch 2 --steps $((2 * K)) --warmup 2 --threads 1 \
    --ckpt-every $K --log-every 100 --out "$out" "$@" > "$out.log" 2>&1
}
run "$W/none" --recompute none
for mode in mlp full; do
  run "$W/$mode" --recompute $mode
  check "--recompute $mode: all $((2 * K)) losses as none's" diff <(losses "$W/none/metrics.jsonl") <(losses "$W/$mode/metrics.jsonl")
  check "--recompute $mode: final weights byte-identical to none's" \
    cmp -s "$W/none/step_0000000$((2 * K))/model.safetensors" "$W/$mode/step_0000000$((2 * K))/model.safetensors"
done
# First half without recompute, second half with full (and the reverse): the same run.
for pair in none:full full:mlp; do
  a=${pair%%:*} b=${pair#*:} out=$W/split_${a}_$b
  RINGGPT_DEBUG_EXIT=0:$((K + 1)) run "$out" --recompute "$a"
  run "$out" --recompute "$b" --resume
  check "$a then $b: resumed at step $K" grep -q "resumed from .*step_0000000$K at step $K" "$out.log"
  check "$a then $b: losses as an uninterrupted none run" diff <(losses "$W/none/metrics.jsonl") <(losses "$out/metrics.jsonl")
  for f in model.safetensors optim.safetensors; do
    check "$a then $b: final $f byte-identical" cmp -s "$W/none/step_0000000$((2 * K))/$f" "$out/step_0000000$((2 * K))/$f"
  done
done
finish
