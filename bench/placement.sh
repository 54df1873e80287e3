#!/usr/bin/env bash
# bench/placement.sh — the placement counts on a corpus of this machine's own files: one document per text file of
# /usr/share/doc, the Debian licences, perl's pod pages and Python's standard library, prepared with the byte
# tokenizer and --shuffle-docs, then bench/placement_bench over its windows (T = 32K, 64K; sp = 2, 4, 8, 16).
# Usage: bench/placement.sh BUILD_DIR OUT_DIR [SEED]      (OUT_DIR: created; holds the links, the dataset, table.md)
set -euo pipefail
BUILD=${1:?usage: bench/placement.sh BUILD_DIR OUT_DIR [SEED]} OUT=${2:?usage: bench/placement.sh BUILD_DIR OUT_DIR [SEED]} SEED=${3:-1}
for bin in ringgpt placement_bench; do
  [ -x "$BUILD/$bin" ] || { echo "placement.sh: $BUILD/$bin not found; build first (cmake --build $BUILD)" >&2; exit 2; }
done
[ ! -e "$OUT" ] || { echo "placement.sh: $OUT exists; give a new directory" >&2; exit 2; }
mkdir -p "$OUT/docs"
STDLIB=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
# Text files only (grep -I: no NUL bytes, not empty); site-packages is not the standard library. One link per
# file, numbered in sorted order, so that file names cannot matter; prepare shuffles the documents.
{
  find /usr/share/doc /usr/share/common-licenses -type f
  find /usr/share/perl /usr/lib/x86_64-linux-gnu/perl -type f -name '*.pod'
  find "$STDLIB" \( -name site-packages -o -name dist-packages -o -name __pycache__ \) -prune -o -type f -print
} 2>/dev/null | LC_ALL=C sort | while IFS= read -r f; do grep -Iq . "$f" && printf '%s\n' "$f"; done > "$OUT/files.txt"
i=0
while IFS= read -r f; do i=$((i + 1)); ln -s "$f" "$OUT/docs/$(printf %06d $i)"; done < "$OUT/files.txt"
"$BUILD/ringgpt" prepare --out "$OUT/ds" --val-fraction 0 --shuffle-docs --seed "$SEED" --quiet "$OUT/docs" >/dev/null
# Document lengths in tokens (bytes + EOS with the byte tokenizer).
xargs -d '\n' stat -L -c %s < "$OUT/files.txt" | sort -n | awk '{ n[NR] = $1 + 1; s += $1 + 1 }
  END { printf "corpus: %d documents, %.1fM tokens; document length median %d, p90 %d, p99 %d tokens\n",
        NR, s / 1e6, n[int(NR * 0.5)], n[int(NR * 0.9)], n[int(NR * 0.99)] }' | tee "$OUT/table.md"
"$BUILD/placement_bench" "$OUT/ds" | tee -a "$OUT/table.md"
