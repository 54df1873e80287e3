#!/usr/bin/env bash
# tests/data/parquet.sh — scripts/parquet_to_jsonl.py: parquet row groups -> JSONL text records that prepare reads as the same texts; SKIP (77) without pyarrow.
set -u
BIN=$(readlink -f "${1:?usage: parquet.sh path/to/ringgpt}")
CONV=$(readlink -f "$(dirname "$0")/../../scripts/parquet_to_jsonl.py")
python3 -c "import pyarrow" 2> /dev/null || { echo "SKIP: no pyarrow (pip install pyarrow)"; exit 77; }
. "$(dirname "$0")/../harness.sh"
cd "$W" || exit 1

# Two files of several row groups; a null row (left out); the same texts as files, in the same order.
mkdir files
python3 - << 'EOF'
import pyarrow as pa, pyarrow.parquet as pq
texts = [f"document {i}: " + "é \"q\" \\ \t word " * (i * 7 % 50) + "\n" for i in range(30)]
for i, t in enumerate(texts): open(f"files/{i:03d}.txt", "w", encoding="utf-8").write(t)
col = texts[:12] + [None] + texts[12:20]
pq.write_table(pa.table({"id": list(range(len(col))), "body": col}), "a.parquet", row_group_size=4)
pq.write_table(pa.table({"body": texts[20:]}), "b.parquet", row_group_size=3)
EOF
python3 "$CONV" --column body a.parquet b.parquet out.jsonl.gz 2> conv.log && grep -q "30 records from 2 files, 1 null row left out" conv.log \
    && [ ! -e out.jsonl.gz.tmp ] && ok || bad "convert: $(cat conv.log)"
"$BIN" prepare --quiet --out ds_files files > /dev/null && "$BIN" prepare --quiet --out ds_pq --text-field body out.jsonl.gz > /dev/null \
    && cmp -s ds_files/train_000000.rgs ds_pq/train_000000.rgs && cmp -s ds_files/val_000000.rgs ds_pq/val_000000.rgs \
    && ok || bad "parquet -> JSONL -> prepare gives the files' tokens"
python3 "$CONV" a.parquet - > stdout.jsonl 2> err.log; [ $? -eq 2 ] && grep -q "no column 'text' (it has id, body); give --column NAME" err.log \
    && ok || bad "a missing column: exit 2 naming the columns: $(cat err.log)"
echo "not parquet" > bad.parquet
python3 "$CONV" bad.parquet x.jsonl 2> err.log; [ $? -eq 2 ] && grep -q "bad.parquet: cannot read it as parquet" err.log && [ ! -e x.jsonl ] \
    && [ ! -e x.jsonl.tmp ] && ok || bad "not parquet: exit 2, no output left: $(cat err.log)"

finish
