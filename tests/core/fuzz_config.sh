#!/usr/bin/env bash
# tests/core/fuzz_config.sh — libFuzzer on the config-file reader (core/args.c: --config, OUT/config.json), briefly; SKIP without clang.
set -u
. "$(dirname "$0")/../fuzz.sh"
fuzz_build config tests/core/fuzz_config.c core/args.c core/json_strict.c core/common.c -lcjson -lz
# Seeds: a run's own config.json (with its config_crc32), and hand-written ones, each after the reader-choice byte.
CORPUS=$FUZZ_DIR/corpus; rm -rf "$CORPUS" "$FUZZ_DIR/run"; mkdir -p "$CORPUS"
for i in $(seq 200); do echo "config fuzz line $i"; done > "$FUZZ_DIR/t.txt"
"$BIN" train --data "$FUZZ_DIR/t.txt" --model tiny --seq-len 16 --batch 1 --steps 1 --threads 1 --out "$FUZZ_DIR/run" > /dev/null || exit 1
{ printf 'a'; cat "$FUZZ_DIR/run/config.json"; } > "$CORPUS/run"
printf 'b{"steps": 3, "lr": 0.002, "out": "x", "tie-embeddings": true, "val-fraction": 0.5}' > "$CORPUS/hand"
printf 'a{"--seed": -5, "steps": 1e3}\n' > "$CORPUS/dashes"
fuzz_run config "$CORPUS" -max_len=8192
