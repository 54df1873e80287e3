#!/usr/bin/env bash
# tests/checkpoints/finetune.sh — --init-from (checkpoint or HF dir) with a longer seq-len and larger rope-theta: step 1's loss is the
# source's eval loss on the same data; a fresh optimizer and step 0; the architecture from the source, contradicting flags exit 2; sampling is seeded and deterministic.
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
make_text "$W/text.txt" 300
"$BIN" train --data "$W/text.txt" --model tiny --seq-len 32 --batch 2 --steps 6 --threads 1 --log-every 100 --out "$W/src" > /dev/null
"$BIN" export "$W/src" --to hf "$W/hf" > /dev/null
for from in src hf; do
  "$BIN" train --data "$W/text.txt" --model tiny --seq-len 64 --rope-theta 40000 --batch 2 --steps 2 --seed 9 --threads 1 \
    --init-from "$W/$from" --out "$W/ft_$from" > "$W/ft_$from.log" 2>&1
  # eval --split train reads all of a text file unless --val-fraction holds out its tail, as train did (0.1)
  step1=$(sed -nE 's/.*"step": 1, "loss": ([0-9.]+).*/\1/p' "$W/ft_$from/metrics.jsonl")
  ev=$("$BIN" eval "$W/$from" --data "$W/text.txt" --split train --val-fraction 0.1 --seq-len 64 --rope-theta 40000 --batch 2 --batches 1 --seed 9 --threads 1 |
       sed -nE 's/eval: loss ([0-9.]+).*/\1/p')
  check "init-from $from: step-1 loss $step1 = eval loss $ev at seq-len 64, rope-theta 40000" \
    awk -v a="$step1" -v b="$ev" 'BEGIN { d = a - b; exit !(a != "" && d < 2e-6 && d > -2e-6) }'
  check "init-from $from: a new run that records its parent" grep -q "\"init_from\":.*$from" "$W/ft_$from/step_00000002/state.json"
done
check "fine-tuned state: step 2, AdamW step 2" grep -q '"adamw_step":.2,' "$W/ft_src/step_00000002/state.json"
# The architecture comes from the source (issue 11 part 5): no shape flag needed; one that contradicts it is exit 2.
for from in src hf; do
  check "init-from $from without shape flags: the source's architecture" \
    "$BIN" train --data "$W/text.txt" --seq-len 64 --steps 1 --threads 1 --init-from "$W/$from" --out "$W/noflags_$from"
  check "init-from $from: config.json records the source's shape" grep -q '"dim":.64,' "$W/noflags_$from/config.json"
done
expect_fail 2 "its layers is 2 but --model small has 4; leave --model out" \
  "$BIN" train --data "$W/text.txt" --model small --seq-len 32 --steps 1 --init-from "$W/src" --out "$W/bad"
expect_fail 2 "its layers is 2 but --model small has 4" "$BIN" train --data "$W/text.txt" --model small --seq-len 32 --steps 1 --init-from "$W/hf" --out "$W/bad"
expect_fail 2 "its dim is 64 but --dim gives 128" "$BIN" train --data "$W/text.txt" --dim 128 --steps 1 --init-from "$W/hf" --out "$W/bad"
expect_fail 2 "its embeddings are untied but --tie-embeddings says tied" \
  "$BIN" train --data "$W/text.txt" --model tiny --tie-embeddings --seq-len 32 --steps 1 --init-from "$W/src" --out "$W/bad"
# sampling: greedy and seeded draws repeat; different seeds differ; the KV-cache path runs past the training length
a=$("$BIN" sample "$W/src" --prompt "Checkpoint test" --tokens 60 --seed 3 --stop-at-eos=false)
b=$("$BIN" sample "$W/src" --prompt "Checkpoint test" --tokens 60 --seed 3 --stop-at-eos=false)
c=$("$BIN" sample "$W/src" --prompt "Checkpoint test" --tokens 60 --seed 4 --stop-at-eos=false)
check "sample: same seed, same text" test "$a" = "$b"
check "sample: another seed, other text" test "$a" != "$c"
check "sample: greedy runs" "$BIN" sample "$W/hf" --prompt "The" --tokens 20 --temperature 0
finish
