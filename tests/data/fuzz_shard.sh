#!/usr/bin/env bash
# tests/data/fuzz_shard.sh — builds the shard-reader fuzzer with clang + libFuzzer + ASan and runs it for a short time; SKIP without them.
set -u
SRC=${1:?usage: fuzz_shard.sh SOURCE_DIR BUILD_DIR SECONDS RINGGPT_BIN}; OUT=${2:?}; SECONDS_=${3:-20}; BIN=${4:?}
CLANG=${CLANG:-$(command -v clang || true)}
if [ -z "$CLANG" ]; then echo "SKIP: clang not found (install clang and libclang-rt-14-dev for the fuzz test)"; exit 77; fi
mkdir -p "$OUT/fuzz"
if ! "$CLANG" -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -I"$SRC" \
        "$SRC/tests/data/fuzz_shard.c" "$SRC/data/shard.c" -lz -o "$OUT/fuzz/fuzz_shard" 2> "$OUT/fuzz/build.log"; then
    if grep -q "fuzzer" "$OUT/fuzz/build.log"; then
        echo "SKIP: clang cannot link libFuzzer (install libclang-rt-14-dev): $(head -c 300 "$OUT/fuzz/build.log")"; exit 77
    fi
    cat "$OUT/fuzz/build.log"; exit 1
fi
# Seeds: real shards of both codecs and widths, small blocks so that every structure appears in a few KB.
CORPUS="$OUT/fuzz/corpus"; rm -rf "$CORPUS" "$OUT/fuzz/ds"*; mkdir -p "$CORPUS" "$OUT/fuzz/in"
for i in 1 2 3; do head -c $((i * 300)) /dev/urandom | od -An -tx1 > "$OUT/fuzz/in/d$i.txt"; done
"$BIN" prepare --quiet --out "$OUT/fuzz/ds1" --block-tokens 200 --shard-tokens 1500 "$OUT/fuzz/in" > /dev/null || exit 1
"$BIN" prepare --quiet --out "$OUT/fuzz/ds2" --block-tokens 300 --byte-planes=false "$OUT/fuzz/in" > /dev/null || exit 1
"$BIN" prepare --quiet --out "$OUT/fuzz/ds3" --synthetic passkey --docs 2 --doc-len 300 --block-tokens 128 --token-bytes 4 > /dev/null || exit 1
# Loss-weight planes (shard version 2, flags bit 1): the synthetic seed above has them; so does a JSONL one.
printf '{"prompt": "question %d ", "completion": "answer %d"}\n' 1 1 2 2 3 3 4 4 > "$OUT/fuzz/in.jsonl"
"$BIN" prepare --quiet --out "$OUT/fuzz/ds4" --block-tokens 64 "$OUT/fuzz/in.jsonl" > /dev/null || exit 1
n=0; for f in "$OUT"/fuzz/ds*/*.rgs; do cp "$f" "$CORPUS/seed$n"; n=$((n + 1)); done
cd "$OUT/fuzz" && ./fuzz_shard -max_total_time="$SECONDS_" -max_len=16384 -rss_limit_mb=1024 -print_final_stats=1 "$CORPUS" 2>&1 | tail -15
rc=${PIPESTATUS[0]}
echo "$([ $rc -eq 0 ] && echo 1 || echo 0) passed, $([ $rc -eq 0 ] && echo 0 || echo 1) failed"
exit $rc
