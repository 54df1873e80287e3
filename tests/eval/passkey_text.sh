#!/usr/bin/env bash
# tests/eval/passkey_text.sh — trains small BPE tokenizers (GPT-2's and Llama 3's pre-tokenizer) with `ringgpt tokenizer train`
# and runs test_passkey_text on each: passkey documents in their tokens.
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
exit $rc
