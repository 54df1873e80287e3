#!/usr/bin/env bash
# tests/data/corpora.sh — corpora as users hold them: JSONL text records, gzip and zstd inputs, --doc-per dir, --shuffle-docs, and their bad input (exit 2, one line, no dataset left).
set -u
BIN=$(readlink -f "${1:?usage: corpora.sh path/to/ringgpt}")
. "$(dirname "$0")/../harness.sh"
cd "$W" || exit 1
prep() { "$BIN" prepare --quiet --threads 2 "$@" > /dev/null; }
# same_shards A B: the two datasets hold byte-identical shards (tokens, blocks, document indexes).
same_shards() {
    [ -f "$1/manifest.json" ] && [ -f "$2/manifest.json" ] || return 2
    local f; for f in "$1"/*.rgs; do cmp -s "$f" "$2/$(basename "$f")" || return 1; done; [ "$(ls "$1" | grep -c rgs)" = "$(ls "$2" | grep -c rgs)" ]; }
# differ A B: both datasets exist and their shards differ.
differ() { same_shards "$1" "$2"; [ $? -eq 1 ]; }
# docs DS: the training split's documents as text, one a line, sorted (a permutation compares equal).
docs() { "$BIN" inspect --head 100000000 "$1" | sed -n 's/^    //p' | sed 's/<eos>/\n/g' | sort; }
# same_docs A B: the same documents (at least 10), in any order.
same_docs() { [ "$(docs "$1" | grep -c .)" -ge 10 ] && diff -q <(docs "$1") <(docs "$2") > /dev/null; }
HAVE_ZSTD=0; command -v zstd > /dev/null && HAVE_ZSTD=1

# The same 40 texts as text files (numbered, so name order is the list's) and as JSONL records with other keys.
mkdir -p files
python3 - << 'EOF'
import json, random
r = random.Random(5)
words = ["river", "stone", "λόγος", "日本語", "tab\there", "quote \"x\"", "back\\slash", "emoji 🎉", "\u001b[0m", "line\r\n"]
texts = [" ".join(r.choice(words) for _ in range(r.randint(1, 3000))) + ("\n" if i % 3 else "") for i in range(40)]
with open("records.jsonl", "w", encoding="utf-8") as f:
    for i, t in enumerate(texts):
        open(f"files/{i:03d}.txt", "w", encoding="utf-8", newline="").write(t)
        f.write(json.dumps({"id": i, "text": t, "meta": {"n": [1, 2]}}, ensure_ascii=(i % 2 == 0)) + ("\n\n" if i == 7 else "\n"))
        if i == 20: f.write("   \n")
with open("content.jsonl", "w", encoding="utf-8") as f:
    for t in texts: f.write(json.dumps({"content": t}) + "\n")
EOF
gzip -k records.jsonl
prep --out ds_files --val-fraction 0.1 files && ok || bad "prepare the text files"
prep --out ds_jsonl --val-fraction 0.1 records.jsonl && same_shards ds_files ds_jsonl && ok || bad "JSONL text records = the same texts as files"
grep -q '"kind":.*"jsonl-text"' ds_jsonl/manifest.json && grep -q '"text_field":.*"text"' ds_jsonl/manifest.json && ok || bad "manifest: jsonl-text, its field"
prep --out ds_gz --val-fraction 0.1 records.jsonl.gz && same_shards ds_files ds_gz && ok || bad "JSONL .gz = the files"
prep --out ds_field --val-fraction 0.1 --text-field content content.jsonl && same_shards ds_files ds_field && ok || bad "--text-field content"
prep --out ds_kind --val-fraction 0.1 --input-kind jsonl-text records.jsonl && same_shards ds_files ds_kind && ok || bad "--input-kind jsonl-text"
# Text files compressed, some of them, one as two gzip members: the same tokens.
mkdir -p mixed && cp files/*.txt mixed/ && gzip mixed/00[0-4].txt && mv mixed/005.txt mixed/005.txt.bin
(head -c 100 mixed/005.txt.bin | gzip; tail -c +101 mixed/005.txt.bin | gzip) > mixed/005.txt.gz && rm mixed/005.txt.bin
prep --out ds_mixed --val-fraction 0.1 mixed && same_shards ds_files ds_mixed && ok || bad "text files .gz (two members in one) = plain"
if [ $HAVE_ZSTD = 1 ]; then
    zstd -q -k records.jsonl && cp records.jsonl.zst named_plain.jsonl
    prep --out ds_zst --val-fraction 0.1 records.jsonl.zst && same_shards ds_files ds_zst && ok || bad "JSONL .zst = the files"
    prep --out ds_magic --val-fraction 0.1 named_plain.jsonl && same_shards ds_files ds_magic && ok || bad "zstd told by its magic, not the name"
    zstd -q mixed/006.txt && rm mixed/006.txt
    prep --out ds_mixed_zst --val-fraction 0.1 mixed && same_shards ds_files ds_mixed_zst && ok || bad "text files .zst = plain"
else
    echo "note: no zstd command; the .zst cases are not run"
fi
# With a BPE tokenizer, its encoding on 2 threads: the same ids for records as for files.
"$BIN" tokenizer train --quiet --vocab 320 --out tok.json files > /dev/null
prep --out bpe_files --tokenizer tok.json files && prep --out bpe_gz --tokenizer tok.json records.jsonl.gz && same_shards bpe_files bpe_gz \
    && ok || bad "BPE: JSONL .gz = the files"

# Bad input: exit 2, one line naming the file (and line), nothing left in --out. Big enough that shards are
# written before the damage is met (--shard-tokens 5000).
python3 -c "
import json
with open('big.jsonl', 'w') as f:
    for i in range(3000): f.write(json.dumps({'text': 'record %d ' % i * 20}) + '\n')"
gzip -c big.jsonl > big.jsonl.gz
expect_bad() {  # expect_bad NAME PATTERN INPUT [flags]: INPUT "" gives none
    local name=$1 pat=$2 in=$3; shift 3
    rm -rf out_bad
    local err; err=$("$BIN" prepare --quiet --shard-tokens 5000 --out out_bad "$@" ${in:+"$in"} 2>&1 > /dev/null); local rc=$?
    if [ $rc -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && grep -Eq -- "$pat" <<< "$err" && [ -z "$(ls -A out_bad 2> /dev/null)" ]; then ok
    else bad "$name: rc=$rc, left: $(ls -A out_bad 2> /dev/null | head -3 | tr '\n' ' '), stderr: $err"; fi
}
{ head -n 2500 big.jsonl; echo '{"id": 2500}'; } > nofield.jsonl
expect_bad "a record without the field" '^ringgpt: nofield.jsonl: line 2501: the record needs a string field "text"' nofield.jsonl
{ head -n 2500 big.jsonl; echo '{"text": 5}'; } > notstring.jsonl
expect_bad "a field that is not a string" 'notstring.jsonl: line 2501: the record needs a string field "text"' notstring.jsonl
{ head -n 2500 big.jsonl; echo '{"text": "cut'; } > malformed.jsonl
expect_bad "malformed JSON" 'malformed.jsonl: line 2501: not valid JSON' malformed.jsonl
expect_bad "the wrong --text-field" 'big.jsonl: line 1: the record needs string fields "prompt" and "completion", or a string field "body"' \
    big.jsonl --text-field body
head -c $(( $(stat -c %s big.jsonl.gz) - 100 )) big.jsonl.gz > cut.jsonl.gz
expect_bad "truncated gzip" '^ringgpt: cut.jsonl.gz: gzip data ends inside a member at byte [0-9]+, the end of the file: the file is truncated' cut.jsonl.gz
(printf '\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03'; head -c 3000 /dev/urandom) > garbage.jsonl.gz
expect_bad "garbage gzip" '^ringgpt: garbage.jsonl.gz: gzip data damaged at or after byte [0-9]+ \(.*\): not a valid gzip file' garbage.jsonl.gz
(printf '\x1f\x8b'; head -c 3000 /dev/urandom) > garbage.txt
expect_bad "garbage gzip in a text file" '^ringgpt: garbage.txt: gzip data damaged' garbage.txt
if [ $HAVE_ZSTD = 1 ]; then
    zstd -q -c big.jsonl > big.jsonl.zst
    head -c $(( $(stat -c %s big.jsonl.zst) - 50 )) big.jsonl.zst > cut.jsonl.zst
    expect_bad "truncated zstd" '^ringgpt: cut.jsonl.zst: zstd data ends inside a frame at byte [0-9]+, the end of the file: the file is truncated' cut.jsonl.zst
    (printf '\x28\xb5\x2f\xfd'; head -c 3000 /dev/urandom) > garbage.jsonl.zst
    expect_bad "garbage zstd" '^ringgpt: garbage.jsonl.zst: zstd data damaged at or after byte [0-9]+ \(.*\): not a valid zstd file' garbage.jsonl.zst
fi
printf '{"prompt": "a", "completion": "b"}\n' > pc.jsonl
expect_bad "prompt/completion records beside text records" "records.jsonl: is jsonl-text input but earlier inputs are jsonl" records.jsonl pc.jsonl
expect_bad "--doc-per dir on JSONL" '--doc-per dir joins text files' records.jsonl --doc-per dir
expect_bad "--doc-per other" "--doc-per must be file or dir, not 'repo'" files --doc-per repo

# --doc-per dir: each directory inside an input directory is a document, its files in name order under headers.
mkdir -p repos/r1/src repos/r2 && printf 'alpha\n' > repos/r1/README && printf 'int x;\n' > repos/r1/src/a.c && printf 'z' > repos/r1/z.txt
printf 'solo\n' > repos/top.txt && printf 'print(1)\n' > repos/r2/x.py && printf 'gz\n' | gzip > repos/r2/y.txt.gz && : > repos/r2/empty.txt
prep --out ds_dirs --val-fraction 0 --doc-per dir repos
want='==> r1/README <==\nalpha\n\n==> r1/src/a.c <==\nint x;\n\n==> r1/z.txt <==\nz<eos>==> r2/x.py <==\nprint(1)\n\n==> r2/y.txt.gz <==\ngz\n<eos>==> top.txt <==\nsolo\n<eos>'
[ "$("$BIN" inspect --head 1000 ds_dirs | sed -n 's/^    //p')" = "$want" ] && ok || bad "--doc-per dir: $("$BIN" inspect --head 1000 ds_dirs)"
grep -q '"doc_per":.*"dir"' ds_dirs/manifest.json && ok || bad "--doc-per dir recorded in the manifest"

# --shuffle-docs: the same documents in an order drawn from the seed, the same for the same seed; split after.
prep --out sh0 --val-fraction 0 files
prep --out sh1 --val-fraction 0 --shuffle-docs --seed 3 files
prep --out sh2 --val-fraction 0 --shuffle-docs --seed 3 mixed
prep --out sh3 --val-fraction 0 --shuffle-docs --seed 4 files
same_docs sh0 sh1 && ok || bad "--shuffle-docs writes a permutation of the documents"
same_shards sh1 sh2 && ok || bad "--shuffle-docs: the same seed, the same order (whatever the inputs' compression)"
differ sh0 sh1 && differ sh1 sh3 && ok || bad "--shuffle-docs: another order than the inputs', another for another seed"
grep -qE '"shuffle_seed":\s*3' sh1/manifest.json && ! grep -q shuffle_seed sh0/manifest.json && ok || bad "the manifest records the shuffle's seed"
prep --out shv1 --val-fraction 0.25 --shuffle-docs --seed 3 files && prep --out shv2 --val-fraction 0.25 --shuffle-docs --seed 3 records.jsonl.gz \
    && same_shards shv1 shv2 && "$BIN" inspect --verify shv1 > /dev/null && [ "$(ls -A shv1 | tr '\n' ' ')" = "manifest.json train_000000.rgs val_000000.rgs " ] \
    && ok || bad "--shuffle-docs with a val split: deterministic, verifies, no temporary file left"
for i in $(seq 60); do printf '{"prompt": "question %d? ", "completion": "answer %d"}\n' "$i" "$i"; done > qa.jsonl
prep --out qa0 --val-fraction 0 qa.jsonl && prep --out qa1 --val-fraction 0 --shuffle-docs qa.jsonl && "$BIN" inspect --verify qa1 > /dev/null \
    && same_docs qa0 qa1 && differ qa0 qa1 && ok || bad "--shuffle-docs keeps each token's loss weight"
expect_bad "--shuffle-docs with --synthetic" '--shuffle-docs orders the documents of input files' "" --synthetic passkey --shuffle-docs

finish
