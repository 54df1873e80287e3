#!/usr/bin/env python3
# scripts/parquet_to_jsonl.py — parquet (FineWeb, PG19, ...) -> JSONL text records for `ringgpt prepare`, streamed by row groups (pyarrow).
"""Writes one {"<column>": text} line per row of the parquet files, in file and row order, to OUT (or stdout
with -): what `ringgpt prepare` reads as JSONL text records. OUT ending in .gz is gzip-compressed; for zstd,
pipe stdout through `zstd`. OUT is written as OUT.tmp and renamed when complete. Rows whose text is null are
left out and counted. Needs pyarrow (pip install pyarrow); memory holds one row group at a time.

    python3 scripts/parquet_to_jsonl.py --column text fineweb/*.parquet fineweb.jsonl.gz
    ringgpt prepare --out out/data/fineweb --tokenizer tok.json fineweb.jsonl.gz
"""
import argparse
import gzip
import json
import os
import sys


def die(msg):
    print(f"parquet_to_jsonl: {msg}", file=sys.stderr)
    sys.exit(2)


def convert(paths, column, out):
    import pyarrow
    import pyarrow.parquet as pq
    rows = nulls = 0
    for path in paths:
        try:
            f = pq.ParquetFile(path)
            if column not in f.schema_arrow.names:
                die(f"{path}: no column {column!r} (it has {', '.join(f.schema_arrow.names)}); give --column NAME")
            for g in range(f.num_row_groups):
                for text in f.read_row_group(g, columns=[column]).column(0).to_pylist():
                    if text is None:
                        nulls += 1
                        continue
                    if not isinstance(text, str):
                        die(f"{path}: column {column!r} holds {type(text).__name__}, not text; give --column NAME")
                    out.write(json.dumps({column: text}, ensure_ascii=False) + "\n")
                    rows += 1
        except (pyarrow.ArrowException, OSError) as e:
            die(f"{path}: cannot read it as parquet ({str(e).splitlines()[0]})")
    return rows, nulls


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="parquet files, then OUT (a .jsonl or .jsonl.gz path, or - for stdout)")
    ap.add_argument("--column", default="text", help="the column that holds each document's text (default: text)")
    a = ap.parse_args()
    if len(a.inputs) < 2:
        ap.error("give the parquet files and then OUT")
    *paths, dest = a.inputs
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        die("needs pyarrow: pip install pyarrow")
    if dest == "-":
        rows, nulls = convert(paths, a.column, sys.stdout)
    else:
        tmp = dest + ".tmp"
        try:
            with (gzip.open(tmp, "wt", encoding="utf-8") if dest.endswith(".gz") else open(tmp, "w", encoding="utf-8")) as out:
                rows, nulls = convert(paths, a.column, out)
            os.replace(tmp, dest)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    print(f"parquet_to_jsonl: {rows} records from {len(paths)} file{'s' if len(paths) != 1 else ''}"
          + (f", {nulls} null row{'s' if nulls != 1 else ''} left out" if nulls else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
