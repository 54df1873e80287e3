#!/usr/bin/env bash
# tests/e2e/eval_doc_mask.sh — eval of a model trained with --doc-mask masks by default (= its training validation loss); --doc-mask=false lets documents leak.
set -euo pipefail
bin=$1 work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" prepare --out "$work/data" --synthetic recall --docs 400 --doc-len 128 --pairs 4 --queries 2 --seed 3 --quiet > /dev/null
"$bin" train --data "$work/data" --model tiny --seq-len 512 --batch 2 --steps 30 --lr 3e-3 --doc-mask --eval-every 30 --eval-batches 3 \
  --threads 2 --out "$work/run" > /dev/null
val=$(grep -o '"val_loss": [^,}]*' "$work/run/metrics.jsonl" | tail -1 | cut -d' ' -f2)
ev() { "$bin" eval "$work/run" --data "$work/data" --batch 2 --batches 3 --threads 2 "$@" | sed -nE 's/^eval: loss ([0-9.]+) .*/\1/p'; }
masked=$(ev) explicit=$(ev --doc-mask) open=$(ev --doc-mask=false)
echo "train val loss $val, eval (default) $masked, eval --doc-mask $explicit, eval --doc-mask=false $open"
awk -v v="$val" -v m="$masked" -v x="$explicit" -v o="$open" 'BEGIN {
  pass = 0; fail = 0
  if (v > 0 && (m - v) / v < 1e-5 && (v - m) / v < 1e-5) pass++; else { print "FAIL: eval (default: the run'"'"'s --doc-mask) " m " != the training val loss " v; fail++ }
  if (x == m) pass++; else { print "FAIL: eval --doc-mask " x " != the default " m; fail++ }
  if ((o - v) / v > 1e-6 || (v - o) / v > 1e-6) pass++; else { print "FAIL: eval --doc-mask=false should see across documents (got " o ")"; fail++ }
  print pass " passed, " fail " failed"; exit fail > 0 }'
