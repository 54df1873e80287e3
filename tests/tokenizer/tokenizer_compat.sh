#!/usr/bin/env bash
# tests/tokenizer/tokenizer_compat.sh — ids identical to HF `tokenizers` on ~2 MB of mixed text for tokenizer.json files HF trains in every
# form ringgpt reads: GPT-2 style (both merge forms, add_prefix_space), Llama 3 style (Split regex, ignore_merges, BOS template), Digits
# (SmolLM2's and after a Split), byte tokens missing from the vocab, added-token flags (lstrip, rstrip, single_word, normalized), and
# SentencePiece-style BPE (byte fallback, unk, Prepend+Replace normalizers, Metaspace); decode = HF decode (= the text where it can be).
set -uo pipefail
BIN=$1
. "$(dirname "$0")/tokenizer_common.sh"
find_pytok
if [[ -z $PYTOK ]]; then echo "SKIP: no python3 with HF tokenizers and pip could not install it (pip install tokenizers)"; exit 77; fi
"$PYTOK" "$HERE/tokenizer_make_corpus.py" "$W/train.txt" 1 1000000
"$PYTOK" "$HERE/tokenizer_make_corpus.py" "$W/text.txt" 2 2000000
for kind in gpt2 gpt2prefix llama3 digits digitsplit nobytes added spm_prepend spm_meta spm_unk; do
  "$PYTOK" "$HERE/tokenizer_hf_compat.py" train $kind "$W/train.txt" "$W/$kind.json" 3000 || { bad "$kind: HF training failed"; continue; }
  "$PYTOK" "$HERE/tokenizer_hf_compat.py" encode "$W/$kind.json" "$W/text.txt" "$W/$kind.hf"
  "$BIN" tokenizer encode --tokenizer "$W/$kind.json" "$W/text.txt" > "$W/$kind.ids"
  if cmp -s "$W/$kind.hf" "$W/$kind.ids"; then ok "$kind: ids identical to HF tokenizers ($(wc -w < "$W/$kind.ids") tokens)"
  else
    bad "$kind: ids differ from HF tokenizers"
    "$PYTOK" - "$W/$kind.hf" "$W/$kind.ids" <<'PY'
import sys
a, b = (open(p).read().split() for p in sys.argv[1:3])
i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
print(f"  first difference at token {i}: HF {a[i:i + 8]} ringgpt {b[i:i + 8]} (lengths {len(a)} {len(b)})")
PY
  fi
  "$BIN" tokenizer decode --tokenizer "$W/$kind.json" "$W/$kind.ids" > "$W/$kind.dec"
  "$PYTOK" "$HERE/tokenizer_hf_compat.py" decode "$W/$kind.json" "$W/$kind.ids" "$W/$kind.hfdec"
  if [[ $kind == nobytes ]]; then   # dropped lead bytes leave invalid UTF-8, which HF decodes to U+FFFD
    check "$kind: decode = HF decode (invalid UTF-8 as U+FFFD)" "$PYTOK" "$HERE/tokenizer_hf_compat.py" same_text "$W/$kind.dec" "$W/$kind.hfdec"
  else check "$kind: decode = HF decode" cmp -s "$W/$kind.dec" "$W/$kind.hfdec"; fi
  # Only these give the text back: lstrip/rstrip tokens take spaces, add_prefix_space and Prepend/Metaspace put a space before the text and after each special
  # token, a missing byte or unk loses characters, the Metaspace decoder leaves <0xNN> as it is.
  case $kind in gpt2|llama3|digits|digitsplit) check "$kind: decode(encode(text)) == text" cmp -s "$W/$kind.dec" "$W/text.txt";; esac
  hf_vocab=$("$PYTOK" "$HERE/tokenizer_hf_compat.py" vocab "$W/$kind.json")
  check "$kind: vocab size = HF's ($hf_vocab)" grep -q "vocab $hf_vocab," <("$BIN" tokenizer info --tokenizer "$W/$kind.json")
done
# Short texts where the start of the text, special tokens and spaces meet: ids and decode as HF's.
for kind in added spm_prepend spm_meta spm_unk digits nobytes; do
  mkdir -p "$W/edges_$kind"
  n=$("$PYTOK" "$HERE/tokenizer_hf_compat.py" edges "$W/$kind.json" "$W/edges_$kind")
  differ=""
  for ((i = 0; i < n; i++)); do
    e="$W/edges_$kind/edge$i"
    "$BIN" tokenizer encode --tokenizer "$W/$kind.json" "$e.txt" > "$e.ids"
    "$BIN" tokenizer decode --tokenizer "$W/$kind.json" "$e.ids" > "$e.dec"
    cmp -s "$e.ids" "$e.hf" && "$PYTOK" "$HERE/tokenizer_hf_compat.py" same_text "$e.dec" "$e.hfdec" || differ+=" $i"
  done
  check "$kind: $n short edge texts: ids and decode as HF's${differ:+ (differ:$differ)}" test "${n:-0}" -gt 0 -a -z "$differ"
done
# The SentencePiece-style decoders drop the space put before the text: the first token alone decodes without it, as in HF.
printf 'Hello world' > "$W/hello.txt"
for kind in spm_prepend spm_meta; do
  "$BIN" tokenizer encode --tokenizer "$W/$kind.json" "$W/hello.txt" > "$W/hello.ids"
  check "$kind: 'Hello world' decodes back to itself" test "$("$BIN" tokenizer decode --tokenizer "$W/$kind.json" "$W/hello.ids")" = "Hello world"
done
# Tokenizers trained by `ringgpt tokenizer train` load in HF tokenizers and encode the same.
for pattern in gpt2 llama3; do
  "$BIN" tokenizer train --quiet --vocab 2000 --pattern $pattern --out "$W/own_$pattern.json" "$W/train.txt" > /dev/null
  "$PYTOK" "$HERE/tokenizer_hf_compat.py" encode "$W/own_$pattern.json" "$W/text.txt" "$W/own.hf" || bad "HF cannot load our $pattern tokenizer"
  "$BIN" tokenizer encode --tokenizer "$W/own_$pattern.json" "$W/text.txt" > "$W/own.ids"
  check "our trained $pattern tokenizer: HF loads it, ids identical ($(wc -w < "$W/own.ids") tokens)" cmp -s "$W/own.hf" "$W/own.ids"
done
"$BIN" tokenizer train --quiet --vocab 2000 --threads 1 --out "$W/own_1thread.json" "$W/train.txt" > /dev/null
check "training is deterministic across thread counts" cmp -s "$W/own_gpt2.json" "$W/own_1thread.json"
# Arbitrary bytes (invalid UTF-8, NULs, lone continuation bytes) still encode, and decode back byte for byte (SentencePiece-style:
# by byte fallback, after the space the encoder put first).
head -c 300000 /dev/urandom > "$W/random.bin"
cat "$W/random.bin" "$W/text.txt" | head -c 1000000 > "$W/mixed.bin"
for kind in gpt2 llama3 digits spm_prepend; do
  for f in random mixed; do
    "$BIN" tokenizer encode --tokenizer "$W/$kind.json" "$W/$f.bin" > "$W/$f.ids" &&
      "$BIN" tokenizer decode --tokenizer "$W/$kind.json" "$W/$f.ids" > "$W/$f.dec"
    if [[ $kind == spm_* ]]; then   # spaces come back as spaces, and one before each piece after a special token
      check "$kind: $f bytes: decode(encode(x)) == x with no special-token text" \
        cmp -s <(tr -d '\0' < "$W/$f.bin" | head -c 20000) <(tr -d '\0' < "$W/$f.dec" | head -c 20000)
    else check "$kind: $f bytes: decode(encode(x)) == x" cmp -s "$W/$f.dec" "$W/$f.bin"; fi
  done
done
finish
