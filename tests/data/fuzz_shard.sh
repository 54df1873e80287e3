#!/usr/bin/env bash
# tests/data/fuzz_shard.sh — libFuzzer on the shard reader (header, block index, document index, trailer, blocks), briefly; SKIP without clang.
set -u
. "$(dirname "$0")/../fuzz.sh"
fuzz_build shard tests/data/fuzz_shard.c data/shard.c core/common.c -lz
# Seeds: real shards of both codecs and widths, small blocks so that every structure appears in a few KB.
CORPUS=$FUZZ_DIR/corpus; rm -rf "$CORPUS" "$FUZZ_DIR/ds"* "$FUZZ_DIR/in"; mkdir -p "$CORPUS" "$FUZZ_DIR/in"
for i in 1 2 3; do head -c $((i * 300)) /dev/urandom | od -An -tx1 > "$FUZZ_DIR/in/d$i.txt"; done
"$BIN" prepare --quiet --out "$FUZZ_DIR/ds1" --block-tokens 200 --shard-tokens 1500 "$FUZZ_DIR/in" > /dev/null || exit 1
"$BIN" prepare --quiet --out "$FUZZ_DIR/ds2" --block-tokens 300 --byte-planes=false "$FUZZ_DIR/in" > /dev/null || exit 1
"$BIN" prepare --quiet --out "$FUZZ_DIR/ds3" --synthetic passkey --docs 2 --doc-len 300 --block-tokens 128 --token-bytes 4 > /dev/null || exit 1
# Loss-weight planes (shard version 2, flags bit 1): the synthetic seed above has them; so does a JSONL one.
printf '{"prompt": "question %d ", "completion": "answer %d"}\n' 1 1 2 2 3 3 4 4 > "$FUZZ_DIR/in.jsonl"
"$BIN" prepare --quiet --out "$FUZZ_DIR/ds4" --block-tokens 64 "$FUZZ_DIR/in.jsonl" > /dev/null || exit 1
n=0; for f in "$FUZZ_DIR"/ds*/*.rgs; do cp "$f" "$CORPUS/seed$n"; n=$((n + 1)); done
fuzz_run shard "$CORPUS" -max_len=16384
