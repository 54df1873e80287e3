#!/usr/bin/env bash
# tests/data/fuzz_manifest.sh — libFuzzer on the dataset manifest reader (data/dataset.c) beside real shards, briefly; SKIP without clang.
set -u
. "$(dirname "$0")/../fuzz.sh"
fuzz_build manifest tests/data/fuzz_manifest.c data/dataset.c data/shard.c core/common.c core/json_strict.c -lcjson -lz
# The dataset: two splits, several small shards. Seeds: its manifest, raw and to be re-signed (first byte 0 / 1, 2, 3).
CORPUS=$FUZZ_DIR/corpus; rm -rf "$CORPUS" "$FUZZ_DIR/ds" "$FUZZ_DIR/in"; mkdir -p "$CORPUS" "$FUZZ_DIR/in"
for i in 1 2 3; do for k in $(seq 20); do echo "manifest fuzz document $i line $k"; done > "$FUZZ_DIR/in/d$i.txt"; done
"$BIN" prepare --quiet --out "$FUZZ_DIR/ds" --block-tokens 300 --shard-tokens 1000 --val-fraction 0.34 "$FUZZ_DIR/in" > /dev/null || exit 1
for m in 0 1 2 3; do { printf "\\x0$m"; cat "$FUZZ_DIR/ds/manifest.json"; } > "$CORPUS/seed$m"; done
export RINGGPT_FUZZ_DATASET=$FUZZ_DIR/ds
fuzz_run manifest "$CORPUS" -max_len=16384
