#!/usr/bin/env bash
# tests/tokenizer/fuzz_tokenizer.sh — builds the tokenizer.json parser fuzzer (clang + libFuzzer + ASan/UBSan) and runs it briefly; SKIP without them.
set -u
. "$(dirname "$0")/../fuzz.sh"
fuzz_build tokenizer tests/tokenizer/fuzz_tokenizer.c tokenizer/bpe.c tokenizer/bpe_encode.c tokenizer/bpe_tables.c tokenizer/normalize.c \
  core/common.c -lcjson -lpcre2-8
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
# SentencePiece-style (Llama 2 / Mistral): Prepend + Replace normalizers, byte fallback, unk, the Replace/ByteFallback/Fuse/Strip
# decoder; and the Metaspace form; and a byte-level one with Digits and a flagged added token.
t = json.load(open(f"{d}/gpt2.json", encoding="utf-8"))
v = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"<0x{b:02X}>": 3 + b for b in range(256)}}
for w in ["\u2581", "t", "h", "e", "c", "a", "\u2581t", "he", "\u2581the", "\u2581c", "at", "\u2581cat"]:
    v[w] = len(v)
spm = {"added_tokens": [{"id": i, "content": c, "special": True, "normalized": False, "lstrip": False, "rstrip": False,
                         "single_word": False} for i, c in enumerate(["<unk>", "<s>", "</s>"])],
       "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                          {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
       "pre_tokenizer": None,
       "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                    {"type": "ByteFallback"}, {"type": "Fuse"},
                                                    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
       "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True, "vocab": v,
                 "merges": [["\u2581", "t"], ["h", "e"], ["\u2581t", "he"], ["\u2581", "c"], ["a", "t"], ["\u2581c", "at"]]}}
json.dump(spm, open(f"{d}/spm.json", "w", encoding="utf-8"), ensure_ascii=False)
spm.update(normalizer=None, pre_tokenizer={"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True},
           decoder={"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True})
json.dump(spm, open(f"{d}/metaspace.json", "w", encoding="utf-8"), ensure_ascii=False)
t["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, t["pre_tokenizer"]]}
t["added_tokens"][0].update(lstrip=True, rstrip=True, single_word=True)
json.dump(t, open(f"{d}/digits.json", "w", encoding="utf-8"), ensure_ascii=False)
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
"\"Metaspace\""
"\"Prepend\""
"\"Replace\""
"\"ByteFallback\""
"\"Fuse\""
"\"Strip\""
"\"Digits\""
"\"byte_fallback\""
"\"prepend_scheme\""
"\"lstrip\""
"\"TemplateProcessing\""
"null"
"true"
D
# Inputs that once failed (2026-12-03: a cache entry of no ids copied from a NULL output, UBSan) run first, every time.
cp "$(dirname "$0")"/fuzz_tokenizer_crash*.json "$CORPUS/"
fuzz_run tokenizer "$CORPUS" -max_len=65536 -timeout=20 -dict="$FUZZ_DIR/dict"
