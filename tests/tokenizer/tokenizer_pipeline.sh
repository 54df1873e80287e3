#!/usr/bin/env bash
# tests/tokenizer/tokenizer_pipeline.sh — a BPE tokenizer end to end: train it, prepare (threads agree, pieces = whole-file ids), train a model,
# checkpoints carry it, eval/sample/export/import use it; vocab and tokenizer mismatches are clear errors (the eval segfault).
set -uo pipefail
BIN=$1
. "$(dirname "$0")/tokenizer_common.sh"
find_pytok
for i in $(seq 400); do printf 'Line %d: the quick brown fox jumps over the lazy dog, %d times.\n' "$i" $((i * 7 % 13)); done > "$W/text.txt"
"$BIN" tokenizer train --quiet --vocab 300 --out "$W/tok.json" "$W/text.txt" > /dev/null
check "tokenizer train writes a tokenizer.json (eos 256, bos 257, pad 258)" grep -q "vocab 300, eos 256, bos 257, pad 258" <("$BIN" tokenizer info --tokenizer "$W/tok.json")

# prepare --tokenizer: 1 and 2 threads write the same shards; the dataset carries the tokenizer
mkdir -p "$W/docs"
for k in 1 2 3; do { head -c $((k * 3000)) "$W/text.txt"; printf 'doc %d<|endoftext|>and a second document in file %d\n' $k $k; } > "$W/docs/d$k.txt"; done
"$BIN" prepare --quiet --out "$W/d1" --tokenizer "$W/tok.json" --threads 1 "$W/docs" > /dev/null
"$BIN" prepare --quiet --out "$W/d2" --tokenizer "$W/tok.json" --threads 2 "$W/docs" > /dev/null
check "prepare: 2 threads write the same shard as 1" cmp -s "$W/d1/train_000000.rgs" "$W/d2/train_000000.rgs"
check "the dataset holds a copy of tokenizer.json" cmp -s "$W/tok.json" "$W/d2/tokenizer.json"
check "manifest: tokenizer_json entry with crc32 and special ids" grep -q '"tokenizer_json":.*"crc32":' <(tr -d '\n\t ' < "$W/d2/manifest.json")
check "<|endoftext|> in text ends a document: 6 documents from 3 files" grep -q "6 documents" <("$BIN" inspect "$W/d2")
check "inspect --verify passes (EOS positions = document index)" "$BIN" inspect --verify "$W/d2"

# A long document is encoded in ~1 MB pieces on 2 threads; the ids equal encoding the whole file at once.
for i in $(seq 30); do cat "$W/text.txt"; done > "$W/big.txt"; for i in 1 2 3; do cat "$W/big.txt"; done > "$W/big3.txt"
"$BIN" prepare --quiet --out "$W/dbig" --tokenizer "$W/tok.json" --threads 2 --block-tokens 4000000 "$W/big3.txt" > /dev/null
whole=$("$BIN" tokenizer encode --tokenizer "$W/tok.json" "$W/big3.txt")
n=$(wc -w <<< "$whole")
pieces=$(shard_ids "$W/dbig/train_000000.rgs" $((n + 1)))
check "a $(($(wc -c < "$W/big3.txt") / 1000000)) MB document cut in pieces gives the whole-file ids ($n tokens) + EOS" test "$pieces" = "$whole 256"

# JSONL prompt/completion records are encoded with the tokenizer, prompt and completion apart; only the
# completion and its EOS carry the loss.
printf '{"prompt": "Line 3: the quick", "completion": " brown fox jumps"}\n' > "$W/r.jsonl"
want="$(printf 'Line 3: the quick' | "$BIN" tokenizer encode --tokenizer "$W/tok.json") $(printf ' brown fox jumps' | "$BIN" tokenizer encode --tokenizer "$W/tok.json") 256"
"$BIN" prepare --quiet --out "$W/dj" --tokenizer "$W/tok.json" --val-fraction 0 "$W/r.jsonl" > /dev/null
got=$(shard_ids "$W/dj/train_000000.rgs")
check "JSONL with --tokenizer: the record's ids are encode(prompt) encode(completion) EOS" test "$got" = "$want"
check "JSONL with --tokenizer: the dataset has loss weights" grep -q "per-token loss weights" <("$BIN" inspect "$W/dj")

# A tokenizer whose post-processor starts sequences with BOS: every document starts with it.
python3 - "$W/tok.json" "$W/tok_bos.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1], encoding="utf-8"))
t["post_processor"] = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {"<|begin_of_text|>": {
                       "id": "<|begin_of_text|>", "ids": [257], "tokens": ["<|begin_of_text|>"]}}}
json.dump(t, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)
PY
"$BIN" prepare --quiet --out "$W/dbos" --tokenizer "$W/tok_bos.json" "$W/docs/d1.txt" > /dev/null
check "add_bos tokenizer: the document starts with BOS 257" test "$(shard_ids "$W/dbos/train_000000.rgs" 2)" = "257 $(head -c 4 "$W/docs/d1.txt" | "$BIN" tokenizer encode --tokenizer "$W/tok.json" | cut -d' ' -f1)"
check "add_bos tokenizer: the manifest says add_bos" grep -q '"add_bos":true' <(tr -d '\n\t ' < "$W/dbos/manifest.json")

# train: checkpoints carry the tokenizer; eval, sample, export and import use it
"$BIN" train --data "$W/d2" --model tiny --seq-len 32 --batch 2 --steps 6 --threads 1 --log-every 100 --out "$W/run" > /dev/null
S=$W/run/step_00000006
check "the checkpoint holds tokenizer.json" cmp -s "$W/tok.json" "$S/tokenizer.json"
check "MANIFEST.json lists tokenizer.json with its CRC" grep -q '"name":"tokenizer.json"' <(tr -d '\n\t ' < "$S/MANIFEST.json")
check "state.json records the tokenizer id and eos/bos" grep -q "\"tokenizer\":{\"id\":\"$(sed -nE 's/.*: (bpe-[0-9a-f]+),.*/\1/p' <("$BIN" tokenizer info --tokenizer "$W/tok.json"))\",\"eos_id\":256,\"bos_id\":257" <(tr -d '\n\t ' < "$S/state.json")
printf 'x' >> "$S/tokenizer.json"
expect_fail 2 "tokenizer.json: size is" "$BIN" eval "$S" --data "$W/d2" --threads 1
cp "$W/tok.json" "$S/tokenizer.json"
ref=$("$BIN" eval "$W/run" --data "$W/d2" --batch 2 --batches 2 --threads 1 | sed -nE 's/eval: loss ([0-9.]+).*/\1/p')
check "eval on data of the same tokenizer runs (loss $ref)" test -n "$ref"
out=$("$BIN" sample "$W/run" --prompt "Line 12: the quick" --tokens 8 --temperature 0 --threads 1)
check "sample prints the prompt and continues it" test "${out:0:18}" = "Line 12: the quick" -a ${#out} -gt 18
"$BIN" export "$W/run" --to hf "$W/hf" > /dev/null
for f in tokenizer.json tokenizer_config.json special_tokens_map.json generation_config.json; do check "export writes $f" test -s "$W/hf/$f"; done
check "export: config.json has the tokenizer's eos 256 and bos 257" grep -q '"bos_token_id":257,"eos_token_id":256' <(tr -d '\n\t ' < "$W/hf/config.json")
"$BIN" import "$W/hf" --out "$W/imp" > /dev/null
check "import keeps the tokenizer.json" cmp -s "$W/tok.json" "$W/imp/step_00000000/tokenizer.json"
check "the imported model evaluates the same" test "$("$BIN" eval "$W/imp" --data "$W/d2" --batch 2 --batches 2 --threads 1 | sed -nE 's/eval: loss ([0-9.]+).*/\1/p')" = "$ref"
"$BIN" export "$W/imp" --to hf "$W/hf2" > /dev/null
check "export -> import -> export keeps tokenizer.json" cmp -s "$W/hf/tokenizer.json" "$W/hf2/tokenizer.json"

# mismatches: the eval segfault (exit 139) of a byte model on 50257-vocab data is now a clear error
"$BIN" train --data "$W/text.txt" --model tiny --seq-len 32 --batch 2 --steps 2 --threads 1 --log-every 100 --out "$W/byterun" > /dev/null
python3 -c "import random, struct, sys; r = random.Random(1); open(sys.argv[1], 'wb').write(b''.join(struct.pack('<H', r.randrange(50257)) for _ in range(5000)))" "$W/toks.u16"
"$BIN" prepare --quiet --out "$W/du16" --input-kind u16 --eos 50256 --vocab 50257 "$W/toks.u16" > /dev/null
expect_fail 2 "the data has vocab 50257 (tokenizer unknown) but the model" "$BIN" eval "$W/byterun" --data "$W/du16" --threads 1
expect_fail 2 "the data was made with tokenizer byte260 but the model" "$BIN" eval "$W/run" --data "$W/text.txt" --threads 1
"$BIN" tokenizer train --quiet --vocab 300 --out "$W/tok2.json" "$W/docs" > /dev/null
"$BIN" prepare --quiet --out "$W/dother" --tokenizer "$W/tok2.json" "$W/docs" > /dev/null
expect_fail 2 "the checkpoint was trained with tokenizer bpe-" "$BIN" train --data "$W/dother" --model tiny --seq-len 32 --batch 2 --steps 8 \
  --threads 1 --log-every 100 --out "$W/run" --resume
printf 'x' >> "$W/d2/tokenizer.json"
expect_fail 2 "d2/tokenizer.json: CRC-32 is" "$BIN" eval "$W/run" --data "$W/d2" --threads 1
expect_fail 2 "disagrees with --tokenizer" "$BIN" prepare --out "$W/x" --tokenizer "$W/tok.json" --vocab 500 "$W/text.txt"
expect_fail 2 "nothere.json: cannot open" "$BIN" prepare --out "$W/x" --tokenizer "$W/nothere.json" "$W/text.txt"
expect_fail 2 "--tokenizer gpt2: no such file; text needs a tokenizer.json" "$BIN" prepare --out "$W/x" --tokenizer gpt2 "$W/text.txt"
# token files with their tokenizer.json: the dataset records it, so sample can decode
"$BIN" tokenizer encode --tokenizer "$W/tok.json" "$W/text.txt" | python3 -c "import struct, sys; sys.stdout.buffer.write(b''.join(struct.pack('<H', int(x)) for x in sys.stdin.read().split()))" > "$W/ids.u16"
"$BIN" prepare --quiet --out "$W/dids" --input-kind u16 --tokenizer "$W/tok.json" "$W/ids.u16" > /dev/null
check "u16 ids + --tokenizer FILE: the dataset carries it (vocab 300, EOS 256)" grep -q "tokenizer bpe-.*vocab 300, EOS 256" <("$BIN" inspect "$W/dids")
# sample on a model whose data had no tokenizer.json cannot encode text: it says so
"$BIN" train --data "$W/du16" --model tiny --seq-len 32 --batch 2 --steps 1 --threads 1 --log-every 100 --out "$W/u16run" > /dev/null
expect_fail 2 "came without a tokenizer.json" "$BIN" sample "$W/u16run" --prompt "Hello" --tokens 3
check "sample with an empty prompt on an id-only tokenizer prints ids" grep -qE "^<[0-9]+>" <("$BIN" sample "$W/u16run" --tokens 3 --stop-at-eos=false)

# the byte tokenizer as before, and its export loads in HF
"$BIN" export "$W/byterun" --to hf "$W/hf260" > /dev/null
check "byte260 export: eos 256, bos 257 as before" grep -q '"bos_token_id":257,"eos_token_id":256' <(tr -d '\n\t ' < "$W/hf260/config.json")
"$BIN" import "$W/hf260" --out "$W/imp260" > /dev/null
check "byte260 export -> import is byte260 again and evaluates on text" "$BIN" eval "$W/imp260" --data "$W/text.txt" --batches 1 --threads 1
if [[ -n $PYTOK ]]; then
  check "HF tokenizers encodes with the exported byte260 tokenizer.json as bytes" test "$("$PYTOK" -c "
from tokenizers import Tokenizer; import sys
print(Tokenizer.from_file(sys.argv[1]).encode('hé<eos>').ids)" "$W/hf260/tokenizer.json")" = "[104, 195, 169, 256]"
  if "$PYTOK" -c "import transformers" 2>/dev/null; then
    check "transformers AutoTokenizer loads the export: same ids and special tokens as ringgpt" test "$("$PYTOK" -c "
import sys, warnings; warnings.filterwarnings('ignore')
from transformers import AutoTokenizer
t = AutoTokenizer.from_pretrained(sys.argv[1]); print(*t.encode('Line 3: the fox<|endoftext|>'), t.eos_token_id, t.bos_token_id, t.pad_token_id)
" "$W/hf" 2>/dev/null)" = "$(printf 'Line 3: the fox<|endoftext|>' | "$BIN" tokenizer encode --tokenizer "$W/tok.json") 256 257 258"
  else echo "note: transformers not installed; the AutoTokenizer check is skipped (pip install transformers)"; fi
else echo "note: no python3 with HF tokenizers; the HF loading checks are skipped"; fi
finish
