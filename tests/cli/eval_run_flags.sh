#!/usr/bin/env bash
# tests/cli/eval_run_flags.sh — eval takes --doc-mask and --loss-on from the training run (= its validation loss); the flags override;
# --split train of data without a val split reads all of it.
set -euo pipefail
bin=$1 work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo '{"pairs": 4, "queries": 2}' > "$work/recall.mix.json"
"$bin" prepare --out "$work/data" --synthetic recall --docs 400 --doc-len 128 --mix "$work/recall.mix.json" --seed 3 --quiet > /dev/null
train() {  # train OUT [flags]: 30 steps on the recall data (answers weighted), validation loss at the end
  local out=$1; shift
  "$bin" train --data "$work/data" --model tiny --seq-len 512 --batch 2 --steps 30 --lr 3e-3 --eval-every 30 --eval-batches 3 \
    --threads 2 --out "$work/$out" "$@" > /dev/null
  grep -o '"val_loss": [^,}]*' "$work/$out/metrics.jsonl" | tail -1 | cut -d' ' -f2
}
ev() { "$bin" eval "$work/$1" --data "$work/data" --batch 2 --batches 3 --threads 2 "${@:2}" | sed -nE 's/^eval: loss ([0-9.]+) .*/\1/p'; }
val_dm=$(train dm --doc-mask) val_all=$(train all --loss-on all)
dm=$(ev dm) dm_explicit=$(ev dm --doc-mask)
# Masking shows on every token (the first tokens of a document see the one before without it); on the answers
# alone 30 steps of training move the loss by only ~1e-5.
dm_every=$(ev dm --loss-on all) dm_open=$(ev dm --loss-on all --doc-mask=false)
all=$(ev all) all_explicit=$(ev all --loss-on all) all_masked=$(ev all --loss-on masked)
# Answers past every evaluated window (long prompts, 1-character completions, 64-token windows): an error, not a loss of 0.
for i in $(seq 40); do printf '{"prompt": "%s", "completion": "x"}\n' "$(printf 'word %.0s' $(seq 200))"; done > "$work/late.jsonl"
"$bin" prepare --out "$work/late" --val-fraction 0.1 --quiet "$work/late.jsonl" > /dev/null
late() { "$bin" eval "$work/dm" --data "$work/late" --seq-len 64 --batch 1 --batches 2 --threads 2 "$@" 2>&1; }
rc=0 late_msg=$(late --loss-on masked) || rc=$?
late_all=$(late --loss-on all | sed -nE 's/^eval: loss ([0-9.]+) .*/\1/p')
echo "answers outside the windows: exit $rc, '$late_msg'; --loss-on all: $late_all"
[[ $rc == 2 && $late_msg == *"select no target"*"--loss-on all"* && -n $late_all ]] || { echo "FAIL: eval where the loss weights select nothing must exit 2 naming --loss-on all"; exit 1; }
# --split train of data without a val split reads all of it; a tail is held out only when --val-fraction asks (issue 71).
"$bin" prepare --out "$work/noval" --val-fraction 0 --quiet "$work/late.jsonl" > /dev/null
tokens() { "$bin" eval "$work/dm" --data "$work/noval" --seq-len 64 --batch 1 --batches all --loss-on all --threads 2 --split train "$@" |
           sed -nE 's/^eval: .* over ([0-9]+) token.*/\1/p'; }
t_default=$(tokens) t_none=$(tokens --val-fraction 0) t_held=$(tokens --val-fraction 0.1)
echo "eval --split train without a val split: $t_default tokens; --val-fraction 0: $t_none; --val-fraction 0.1: $t_held"
[[ -n $t_default && $t_default == "$t_none" && $t_held -lt $t_default ]] ||
  { echo "FAIL: eval --split train of data without a val split must read all of it (as --val-fraction 0)"; exit 1; }
echo "--doc-mask run: train val $val_dm, eval (default) $dm, --doc-mask $dm_explicit; every target: $dm_every, --doc-mask=false $dm_open"
echo "--loss-on all run: train val $val_all, eval (default) $all, --loss-on all $all_explicit, --loss-on masked $all_masked"
awk -v v="$val_dm" -v m="$dm" -v x="$dm_explicit" -v e="$dm_every" -v o="$dm_open" -v va="$val_all" -v a="$all" -v ax="$all_explicit" -v am="$all_masked" '
function close_to(a, b) { return b > 0 && (a - b) / b < 1e-5 && (b - a) / b < 1e-5 }
function differs(a, b) { return (a - b) / b > 1e-4 || (b - a) / b > 1e-4 }
function check(ok, what) { if (ok) pass++; else { print "FAIL: " what; fail++ } }
BEGIN {
  check(close_to(m, v), "eval of the --doc-mask run (default) " m " != its training val loss " v)
  check(x == m, "eval --doc-mask " x " != the default " m)
  check(differs(o, e), "eval --doc-mask=false should see across documents (" o " vs " e " with the mask, every target)")
  check(close_to(a, va), "eval of the --loss-on all run (default) " a " != its training val loss " va)
  check(ax == a, "eval --loss-on all " ax " != the default " a)
  check(differs(am, va), "eval --loss-on masked should count only the answers (got " am ")")
  print pass + 0 " passed, " fail + 0 " failed"; exit fail > 0 }'
