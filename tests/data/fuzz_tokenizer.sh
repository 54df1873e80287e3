#!/usr/bin/env bash
# tests/data/fuzz_tokenizer.sh — builds the tokenizer.json parser fuzzer (clang + libFuzzer + ASan/UBSan) and runs it briefly; SKIP without them.
set -u
SRC=${1:?usage: fuzz_tokenizer.sh SOURCE_DIR BUILD_DIR SECONDS RINGGPT_BIN}; OUT=${2:?}; SECONDS_=${3:-15}; BIN=${4:?}
CLANG=${CLANG:-$(command -v clang || true)}
if [ -z "$CLANG" ]; then echo "SKIP: clang not found (install clang and libclang-rt-14-dev for the fuzz test)"; exit 77; fi
mkdir -p "$OUT/fuzz_tok" && OUT=$(cd "$OUT" && pwd)
if ! "$CLANG" -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I"$SRC" \
        "$SRC/tests/data/fuzz_tokenizer.c" "$SRC/data/bpe.c" "$SRC/core/common.c" -lcjson -lpcre2-8 -o "$OUT/fuzz_tok/fuzz_tokenizer" \
        2> "$OUT/fuzz_tok/build.log"; then
    if grep -q "fuzzer" "$OUT/fuzz_tok/build.log"; then
        echo "SKIP: clang cannot link libFuzzer (install libclang-rt-14-dev): $(head -c 300 "$OUT/fuzz_tok/build.log")"; exit 77
    fi
    cat "$OUT/fuzz_tok/build.log"; exit 1
fi
# Seeds: small real tokenizers (GPT-2 style and Llama 3 style, both merge forms), and their parts as a dictionary.
CORPUS="$OUT/fuzz_tok/corpus"; rm -rf "$CORPUS" "$OUT/fuzz_tok/in"; mkdir -p "$CORPUS" "$OUT/fuzz_tok/in"
for i in $(seq 40); do echo "the cat's 123 hats, don't  stop  $i"; done > "$OUT/fuzz_tok/in/t.txt"
"$BIN" tokenizer train --quiet --vocab 290 --out "$CORPUS/gpt2.json" "$OUT/fuzz_tok/in" > /dev/null || exit 1
"$BIN" tokenizer train --quiet --vocab 280 --pattern llama3 --out "$CORPUS/llama3.json" "$OUT/fuzz_tok/in" > /dev/null || exit 1
python3 - "$CORPUS" <<'PY'
import json, sys
d = sys.argv[1]
t = json.load(open(f"{d}/gpt2.json", encoding="utf-8"))
t["model"]["merges"] = [" ".join(m) for m in t["model"]["merges"]]
t["model"]["ignore_merges"] = True
json.dump(t, open(f"{d}/strings.json", "w", encoding="utf-8"), ensure_ascii=False)
PY
cat > "$OUT/fuzz_tok/dict" <<'D'
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
cd "$OUT/fuzz_tok" && ./fuzz_tokenizer -max_total_time="$SECONDS_" -max_len=65536 -rss_limit_mb=2048 -timeout=20 -dict=dict \
    -print_final_stats=1 "$CORPUS" 2>&1 | tail -15
rc=${PIPESTATUS[0]}
echo "$([ $rc -eq 0 ] && echo 1 || echo 0) passed, $([ $rc -eq 0 ] && echo 0 || echo 1) failed"
exit $rc
