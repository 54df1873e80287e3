#!/usr/bin/env bash
# tests/eval/passkey_text.sh — trains small BPE tokenizers (GPT-2's and Llama 3's pre-tokenizer) with `ringgpt tokenizer train`
# and runs test_passkey_text on each: passkey documents in their tokens; the GPT-2 one again with a post-processor that puts BOS
# first (as Llama's do), whose documents start with it.
set -uo pipefail
BIN=$1 TEST=$2 ROOT=$3
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
TEXT=$ROOT/recipes/long_context/text.txt
rc=0
for pattern in gpt2 llama3; do
  "$BIN" tokenizer train --quiet --vocab 500 --pattern $pattern --out "$W/$pattern.json" "$TEXT" > /dev/null || { echo "FAIL: tokenizer train ($pattern)"; exit 1; }
  echo "== $pattern"
  "$TEST" "$W/$pattern.json" "$TEXT" || rc=1
done
python3 - "$W/gpt2.json" "$W/bos.json" <<'PYEOF' || { echo "FAIL: the BOS tokenizer"; exit 1; }
import json, sys
t = json.load(open(sys.argv[1]))
bos = next(a for a in t["added_tokens"] if a["content"] == "<|begin_of_text|>")
special = {"SpecialToken": {"id": bos["content"], "type_id": 0}}
t["post_processor"] = {"type": "TemplateProcessing", "single": [special, {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [special, {"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                       "special_tokens": {bos["content"]: {"id": bos["content"], "ids": [bos["id"]], "tokens": [bos["content"]]}}}
json.dump(t, open(sys.argv[2], "w"))
PYEOF
echo "== gpt2 with BOS"
"$TEST" "$W/bos.json" "$TEXT" bos || rc=1
exit $rc
