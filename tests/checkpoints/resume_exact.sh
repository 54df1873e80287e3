#!/usr/bin/env bash
# tests/checkpoints/resume_exact.sh — 2k steps uninterrupted vs k + resume + k: identical losses and final weights/moments, byte for byte.
# Data: a text file (shuffled windows), a prepared shard dataset (the streaming loader's grouped shuffle), and
# both again without shuffling (--no-shuffle: samples in stream order).
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
make_text "$W/text.txt" 400
"$BIN" prepare --out "$W/shards" --block-tokens 2048 "$W/text.txt" > /dev/null

K=6
run() {  # run DATA OUT [extra flags]
  local data=$1 out=$2; shift 2
  "$BIN" train --data "$data" --model tiny --seq-len 48 --batch 2 --grad-accum 2 --steps $((2 * K)) --warmup 3 \
    --threads 1 --eval-every 4 --eval-batches 2 --ckpt-every $K --log-every 100 --out "$out" "$@" > "$out.log" 2>&1
}
for case in text.txt shards text.txt:--no-shuffle shards:--no-shuffle; do
  src=${case%%:*} flags=() data=${case/:--/_}
  [[ $case == *:* ]] && flags=("--${case#*:--}")
  [[ -e $W/$src ]] || { bad "$src: prepare failed"; continue; }
  run "$W/$src" "$W/full_$data" "${flags[@]}"
  RINGGPT_DEBUG_EXIT=0:$((K + 1)) run "$W/$src" "$W/split_$data" "${flags[@]}"   # stops right after step K's checkpoint
  check "$data: first half stopped with step $K committed" grep -qx "step_0000000$K" "$W/split_$data/LATEST"
  run "$W/$src" "$W/split_$data" "${flags[@]}" --resume
  check "$data: resume reported" grep -q "resumed from .*step_0000000$K at step $K" "$W/split_$data.log"
  final=step_$(printf %08d $((2 * K)))
  for f in model.safetensors optim.safetensors; do
    check "$data: final $f byte-identical" cmp -s "$W/full_$data/$final/$f" "$W/split_$data/$final/$f"
  done
  check "$data: all $((2 * K)) losses identical" diff <(losses "$W/full_$data/metrics.jsonl") <(losses "$W/split_$data/metrics.jsonl")
  check "$data: val losses identical" diff <(grep -o '"val_loss": [^,}]*' "$W/full_$data/metrics.jsonl") \
                                           <(grep -o '"val_loss": [^,}]*' "$W/split_$data/metrics.jsonl")
done
# Interrupted two steps after its checkpoint: the resumed run redoes those steps, and metrics.jsonl
# ends with every step exactly once, with the uninterrupted run's losses.
RINGGPT_DEBUG_EXIT=0:$((K + 3)) run "$W/text.txt" "$W/late"
check "interrupted run logged 2 steps past its checkpoint" test "$(losses "$W/late/metrics.jsonl" | wc -l)" -eq $((K + 2))
run "$W/text.txt" "$W/late" --resume
check "resumed metrics.jsonl: each step once, losses as uninterrupted" \
  diff <(losses "$W/full_text.txt/metrics.jsonl") <(losses "$W/late/metrics.jsonl")
# The shuffle setting is part of the run: resuming a shuffled run with --no-shuffle is refused (--steps beyond the
# checkpoint, so that the step count is not what is refused).
expect_fail 2 "run.shuffle" "$BIN" train --data "$W/text.txt" --model tiny --seq-len 48 --batch 2 --grad-accum 2 \
  --steps $((2 * K + 4)) --warmup 3 --threads 1 --out "$W/split_text.txt" --resume --no-shuffle
# Unshuffled really is stream order, shuffled is not: their first losses differ.
differ() { ! diff -q <(losses "$1") <(losses "$2") > /dev/null; }
check "--no-shuffle changes the data order" differ "$W/full_text.txt/metrics.jsonl" "$W/full_text.txt_no-shuffle/metrics.jsonl"
# --resume auto on an empty --out starts fresh; bare --resume there is a usage error.
run "$W/text.txt" "$W/auto" --resume auto --steps 2
check "--resume auto without a checkpoint starts fresh" grep -q "starting fresh" "$W/auto.log"
expect_fail 2 "holds no checkpoint" "$BIN" train --data "$W/text.txt" --model tiny --seq-len 48 --out "$W/empty" --resume
finish
