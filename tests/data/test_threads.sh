#!/usr/bin/env bash
# tests/data/test_threads.sh — `prepare --threads N` writes byte-identical datasets for every N (blocks deflated on compression threads).
set -u
BIN=${1:?usage: test_threads.sh path/to/ringgpt}
W=$(mktemp -d "${TMPDIR:-/tmp}/ringgpt_threads_XXXXXX")
trap 'rm -rf "$W"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# same NAME PREPARE_ARGS...: prepare with 1, 2 and 3 threads; every file of the datasets identical, and --verify passes.
# Small blocks and shards: many blocks in flight at once, several shards per split, a short last block.
same() {
    local name=$1; shift
    for th in 1 2 3; do
        if ! "$BIN" prepare --quiet --out "$W/$name$th" --threads $th --block-tokens 1000 --shard-tokens 23456 "$@" > "$W/log" 2>&1; then
            bad "$name: prepare --threads $th failed: $(cat "$W/log")"; return
        fi
    done
    "$BIN" inspect --verify "$W/${name}2" > /dev/null 2>&1 && ok || bad "$name: --verify of the 2-thread dataset"
    local n; n=$(ls "$W/${name}1"/*.rgs | wc -l)
    [ "$n" -ge 3 ] && ok || bad "$name: only $n shards; the test wants several"
    for th in 2 3; do
        diff -r "$W/${name}1" "$W/$name$th" > /dev/null && ok || bad "$name: --threads $th wrote a different dataset than --threads 1"
    done
}

mkdir -p "$W/text"
for i in $(seq 1 12); do seq 1 $((i * 900)) | awk -v d=$i '{ print "doc", d, "line", $1, $1 * 7 % 13, "the quick brown fox" }' > "$W/text/d$i.txt"; done
same byte "$W/text"
"$BIN" tokenizer train --quiet --vocab 400 --out "$W/tok.json" "$W/text" > /dev/null 2>&1 && ok || bad "tokenizer train"
same bpe --tokenizer "$W/tok.json" "$W/text"
cat "$W"/text/*.txt | head -c 200000 > "$W/toks.u16"
same u16 --input-kind u16 --eos 10 --vocab 65536 "$W/toks.u16"
same u32 --input-kind u32 --eos 10 --vocab 4294967295 --token-bytes 4 --byte-planes=false "$W/toks.u16"
same passkey --synthetic passkey --docs 20 --doc-len 3000 --vocab 260 --level 1
same recall --synthetic recall --docs 20 --doc-len 3000 --level 0

echo "test_threads: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
