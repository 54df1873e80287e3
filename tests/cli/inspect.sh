#!/usr/bin/env bash
# tests/cli/inspect.sh — `ringgpt inspect`: --head shows BPE and byte datasets as text with loss-masked tokens in
# brackets; a checkpoint (run directory, step directory, an import, one saved on a 2-rank ring) summarised; damage exits 2.
# Usage: inspect.sh RINGGPT MPIEXEC
set -uo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/common.sh"
mpirun_np() { local np=$1; shift; "$MPIEXEC" --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np "$np" "$@"; }
# has FILE TEXT: FILE holds TEXT as a fixed string (say which line it looked for when not).
has() { grep -qF -- "$2" "$1" || { echo "  $1 lacks: $2"; sed 's/^/  | /' "$1"; false; }; }

# --- --head: text, masks, escapes -----------------------------------------------------------------------------------
# Prompt/completion records: the prompt (loss weight 0) must show in brackets, the completion and its EOS outside.
for i in $(seq 60); do printf '{"prompt": "Q%d: what is [%d]+1?\\n", "completion": "A: %d \\u00e9"}\n' "$i" "$i" $((i + 1)); done > "$W/qa.jsonl"
make_text "$W/text.txt" 200
"$BIN" tokenizer train --quiet --vocab 300 --out "$W/tok.json" "$W/text.txt" "$W/qa.jsonl" > /dev/null
"$BIN" prepare --out "$W/bpe" --tokenizer "$W/tok.json" --quiet "$W/qa.jsonl" > /dev/null
"$BIN" inspect "$W/bpe" --head 60 > "$W/bpe.txt"
check "BPE JSONL: text with the prompt in brackets, the completion and <|endoftext|> outside, [ ] and \\n escaped" \
  has "$W/bpe.txt" '    [Q1: what is \[1\]+1?\n]A: 2 é<|endoftext|>[Q2: what is \[2\]+1?\n]A: 3 é<|endoftext|>['
check "BPE JSONL: the header says what the brackets mean" has "$W/bpe.txt" "first 60 tokens as text ([...] = loss weight 0, not trained on):"
"$BIN" prepare --out "$W/byte" --quiet "$W/qa.jsonl" > /dev/null
"$BIN" inspect "$W/byte" --head 30 > "$W/byte.txt"
check "byte-level JSONL: the same, <eos> for EOS, cut after 30 tokens" has "$W/byte.txt" '    [Q1: what is \[1\]+1?\n]A: 2 é<eos>[Q2:]'
"$BIN" prepare --out "$W/pk" --synthetic passkey --docs 3 --doc-len 200 --quiet > /dev/null
"$BIN" inspect "$W/pk" --head 201 > "$W/pk.txt"
key=$(sed -nE 's/.*The pass key is ([0-9]{5})\. Remember.*/\1/p' "$W/pk.txt")
check "passkey: only the answer ($key) and the EOS outside the brackets, the next document's first token in them" \
  grep -qE "^    \[There is a pass key .*The pass key is \]$key<eos>\[T\]\$" "$W/pk.txt"
"$BIN" prepare --out "$W/plain" --tokenizer "$W/tok.json" --quiet "$W/text.txt" > /dev/null
"$BIN" inspect "$W/plain" --head 12 > "$W/plain.txt"
check "BPE text without loss weights: text, no brackets" has "$W/plain.txt" '    CLI test line 1: the quick brown'
check "BPE text without loss weights: no bracket anywhere in the head" bash -c "! grep -A1 'first 12 tokens' '$W/plain.txt' | grep -q '\['"
"$BIN" inspect "$W/bpe/train_000000.rgs" --head 8 > "$W/shard.txt"
check "a BPE shard alone (no tokenizer.json): ids, the prompt's in brackets" \
  bash -c "grep -q 'first 8 tokens as ids (tokenizer bpe-' '$W/shard.txt' && grep -qE '^    \[[0-9]+( [0-9]+){7}\]$' '$W/shard.txt'"
"$BIN" inspect "$W/bpe/train_000000.rgs" --head 30 > "$W/shard30.txt"
check "ids: the completion's ids outside the brackets" grep -qE '^    \[[0-9 ]+\] [0-9]+ [0-9 ]+ \[' "$W/shard30.txt"

# --- a checkpoint: a run directory (its LATEST), a step directory, an import ----------------------------------------
"$BIN" train --data "$W/bpe" --model tiny --seq-len 16 --batch 2 --steps 3 --ckpt-every 2 --doc-mask --threads 1 \
  --out "$W/run" > /dev/null
"$BIN" inspect "$W/run" > "$W/run.txt"
for line in "$W/run/step_00000003: checkpoint of step 3 (LATEST of $W/run, 2 checkpoints there)" \
  "kind train: weights, AdamW moments and data position" \
  "model tiny: 2 layers, dim 64, 4 heads, 2 kv heads, ffn 192, vocab 300," "; 0.14M parameters" \
  "tokenizer bpe-" "; tokenizer.json in the checkpoint" "layout: saved on dp 1 x sp 1" \
  "run: seq-len 16, batch 2, grad-accum 1, steps 3, data $W/bpe, loss-on masked, doc-mask on" \
  "optimizer: lr 0.001 -> min-lr 0.0001 (cosine, warmup 10)" "; seed 1337" "data position: 6 sequences consumed" \
  "in 5 files; verify: ok"; do
  check "run directory: '$line'" has "$W/run.txt" "$line"
done
bytes=$(cat "$W"/run/step_00000003/* | wc -c)
check "run directory: the size is the step directory's ($bytes bytes)" has "$W/run.txt" "size: $(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1e6 }') MB"
"$BIN" inspect "$W/run/step_00000002" > "$W/step.txt"
check "step directory: that step" has "$W/step.txt" "$W/run/step_00000002: checkpoint of step 2"
check "step directory: its own data position" has "$W/step.txt" "data position: 4 sequences consumed"
check "step directory: no LATEST mentioned" bash -c "! grep -q 'LATEST' '$W/step.txt'"
"$BIN" export "$W/run" --to hf "$W/hf" > /dev/null && "$BIN" import "$W/hf" --out "$W/imp" > /dev/null
"$BIN" inspect "$W/imp" > "$W/imp.txt"
check "import: kind weights" has "$W/imp.txt" "kind weights: weights only"
check "import: no run, where it came from" has "$W/imp.txt" "run: none; weights imported from $W/hf (max_position_embeddings 16)"
check "import: model and tokenizer" bash -c "grep -q 'vocab 300, .*0.14M parameters' '$W/imp.txt' && grep -q 'tokenizer bpe-' '$W/imp.txt'"
make_text "$W/ring.txt" 100
mpirun_np 2 "$BIN" train --sp 2 --data "$W/ring.txt" --model tiny --seq-len 32 --batch 2 --steps 1 --threads 1 \
  --out "$W/ring" > /dev/null 2>&1
"$BIN" inspect "$W/ring" > "$W/ring_insp.txt" 2>&1
check "a checkpoint saved on a 2-rank ring: its layout" has "$W/ring_insp.txt" "layout: saved on dp 1 x sp 2"

# --- damage: one line naming the problem, exit 2 --------------------------------------------------------------------
cp -r "$W/run" "$W/bad"
printf 'X' | dd of="$W/bad/step_00000003/model.safetensors" bs=1 seek=1000 conv=notrunc 2> /dev/null
expect_fail 2 "step_00000003/model.safetensors: CRC32 is" "$BIN" inspect "$W/bad/step_00000003"
expect_fail 2 "whose newest valid checkpoint is $W/bad/step_00000002" "$BIN" inspect "$W/bad"
echo "step_x" > "$W/bad/LATEST"
expect_fail 2 "LATEST: names no step directory" "$BIN" inspect "$W/bad"
rm "$W/bad/LATEST"
"$BIN" inspect "$W/bad" > "$W/nolatest.txt"
check "a run without LATEST: its newest valid step, said so" has "$W/nolatest.txt" "checkpoint of step 2 (no LATEST: the newest valid one of"
cp -r "$W/run" "$W/cfg"; sed -i 's/"seq-len":\t16/"seq-len":\t17/' "$W/cfg/config.json"
expect_fail 2 "config.json: \"config_crc32\" does not match" "$BIN" inspect "$W/cfg"
cp -r "$W/run" "$W/trunc"; : > "$W/trunc/step_00000003/state.json"
expect_fail 2 "step_00000003/state.json" "$BIN" inspect "$W/trunc/step_00000003"
expect_fail 2 "--head shows a dataset's first tokens" "$BIN" inspect "$W/run" --head 5
expect_fail 2 "a Hugging Face model directory, not a ringgpt checkpoint; \`ringgpt import" "$BIN" inspect "$W/hf"
finish
