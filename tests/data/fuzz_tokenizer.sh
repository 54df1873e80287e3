#!/usr/bin/env bash
# tests/data/fuzz_tokenizer.sh — builds the tokenizer.json parser fuzzer (clang + libFuzzer + ASan/UBSan) and runs it briefly; SKIP without them.
set -u
. "$(dirname "$0")/../fuzz.sh"
fuzz_build tokenizer tests/data/fuzz_tokenizer.c data/bpe.c core/common.c -lcjson -lpcre2-8
# Seeds: small real tokenizers (GPT-2 style and Llama 3 style, both merge forms), and their parts as a dictionary.
CORPUS="$FUZZ_DIR/corpus"; rm -rf "$CORPUS" "$FUZZ_DIR/in"; mkdir -p "$CORPUS" "$FUZZ_DIR/in"
for i in $(seq 40); do echo "the cat's 123 hats, don't  stop  $i"; done > "$FUZZ_DIR/in/t.txt"
"$BIN" tokenizer train --quiet --vocab 290 --out "$CORPUS/gpt2.json" "$FUZZ_DIR/in" > /dev/null || exit 1
"$BIN" tokenizer train --quiet --vocab 280 --pattern llama3 --out "$CORPUS/llama3.json" "$FUZZ_DIR/in" > /dev/null || exit 1
python3 - "$CORPUS" <<'PY'
import json, sys
d = sys.argv[1]
t = json.load(open(f"{d}/gpt2.json", encoding="utf-8"))
t["model"]["merges"] = [" ".join(m) for m in t["model"]["merges"]]
t["model"]["ignore_merges"] = True
json.dump(t, open(f"{d}/strings.json", "w", encoding="utf-8"), ensure_ascii=False)
PY
cat > "$FUZZ_DIR/dict" <<'D'
"\"type\""
"\"ByteLevel\""
"\"Split\""
"\"Sequence\""
"\"BPE\""
"\"Isolated\""
"\"Regex\""
"\"merges\""
"\"vocab\""
"\"added_tokens\""
"\"pretokenizers\""
"\"TemplateProcessing\""
"null"
"true"
D
fuzz_run tokenizer "$CORPUS" -max_len=65536 -timeout=20 -dict="$FUZZ_DIR/dict"
