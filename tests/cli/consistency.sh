#!/usr/bin/env bash
# tests/cli/consistency.sh — one CLI: the same default for a flag in every subcommand, one default per help line,
# eval's split and --batches all, negative counts refused, prepare's binary skip and --include, exit code 2 for bad
# input, and under MPI a usage error printed once (rank 0) with exit 2.
set -uo pipefail
BIN=$1 MPIEXEC=${2:-mpiexec}
. "$(dirname "$0")/common.sh"
make_text "$W/text.txt" 300
# -- help: one default per line, the same default for the same flag in every subcommand
# --help wraps at 100 columns; a flag's continuation lines (indented past the flag column) are joined back to it.
unwrap() {
  awk 'substr($0, 1, 27) ~ /^ +$/ && substr($0, 28, 1) != " " { sub(/^ +/, " "); line = line $0; next }
       NR > 1 { print line } { line = $0 } END { print line }'
}
for c in train eval sample prepare export import inspect; do "$BIN" $c --help | unwrap > "$W/help_$c.txt"; done
check "every --help line fits in 100 columns" bash -c "for c in train eval sample prepare export import inspect passkey ruler plan tokenizer; do '$BIN' \$c --help; done | awk 'length > 100 { bad = 1; print } END { exit bad }'"
expect_fail 2 "did you mean --seq-len?" "$BIN" train --seq-lne 64 --data "$W/none"
echo '{"seq_len": 64}' > "$W/typo.json"
expect_fail 2 'did you mean "seq-len"?' "$BIN" train --config "$W/typo.json" --data "$W/none"
check "no help line has two defaults" bash -c "! grep -hE '\\(default.*\\(default|\\(default.*\\(preset' '$W'/help_*.txt"
check "preset overrides show (preset)" grep -qE -- '--layers +N +layer count \(preset\)$' "$W/help_train.txt"
check "train --help does not say the CPU only" bash -c "! grep -q 'on the CPU' '$W/help_train.txt'"
check "sample's usage: --prompt is optional" grep -q 'sample CKPT \[--prompt TEXT\]' "$W/help_sample.txt"
same_default() {   # the default text of flag $1 in every help that has it (eval's "the checkpoint's" aside)
  local n; n=$(grep -hE -- "^  $1 " "$W"/help_*.txt | grep -v "the checkpoint's" | sed -E 's/.*(\((default|preset)[^)]*\))$/\1/' | sort -u | wc -l)
  [[ $n == 1 ]]
}
for f in --threads --seed --val-fraction --seq-len --batch --loss-chunk; do
  grep -qhE -- "^  $f " "$W"/help_*.txt && check "$f: one default across subcommands" same_default "$f"
done
check "--seed 1337 in train, sample and prepare" test "$(grep -hcE -- '^  --seed .*\(default 1337\)$' "$W"/help_{train,sample,prepare}.txt | awk '{s += $1} END {print s}')" = 3
check "--val-fraction 0.1 in train, eval and prepare" \
  test "$(grep -hcE -- '^  --val-fraction .*\(default 0.1\)$' "$W"/help_{train,eval,prepare}.txt | awk '{s += $1} END {print s}')" = 3
# -- eval: the val split by default; --batches all; a request beyond the split is refused
"$BIN" train --data "$W/text.txt" --model tiny --seq-len 32 --batch 2 --steps 2 --threads 1 --log-every 100 --out "$W/run" > /dev/null
out=$("$BIN" eval "$W/run" --data "$W/text.txt" --batches 1 --threads 1)
check "eval: val split by default ($out)" grep -q "val split" <<<"$out"
all=$("$BIN" eval "$W/run" --data "$W/text.txt" --batches all --batch 3 --threads 1)
tokens=$(sed -nE 's/.* over ([0-9]+) tokens.*/\1/p' <<<"$all")
val_bytes=$(( $(stat -c %s "$W/text.txt") - $(stat -c %s "$W/text.txt") * 9 / 10 ))
check "eval --batches all: every window of the val split ($tokens tokens, val part about $val_bytes bytes)" \
  test "$tokens" -gt $((val_bytes - 64)) -a "$tokens" -le "$val_bytes"
expect_fail 2 "use --batches all or at most" "$BIN" eval "$W/run" --data "$W/text.txt" --batches 1000
expect_fail 2 "--batches must be a positive count or all" "$BIN" eval "$W/run" --data "$W/text.txt" --batches -1
# -- negative counts
T=("$BIN" train --data "$W/text.txt" --model tiny --seq-len 32 --steps 1 --out "$W/neg")
expect_fail 2 "--keep must not be negative" "${T[@]}" --keep -1
expect_fail 2 "--ckpt-every must be" "${T[@]}" --ckpt-every -5
expect_fail 2 "must not be negative" "$BIN" sample "$W/run" --tokens -3
expect_fail 2 "--docs must be positive" "$BIN" prepare --out "$W/p" --synthetic passkey --docs -2
# -- bad input exits 2: a directory without a manifest, seq-len longer than a dataset
mkdir -p "$W/empty"
expect_fail 2 "manifest.json: cannot open" "$BIN" train --data "$W/empty" --steps 1 --out "$W/x"
"$BIN" prepare --out "$W/ds" --quiet "$W/text.txt" > /dev/null
expect_fail 2 "fewer than --seq-len 100000 + 1" "$BIN" train --data "$W/ds" --seq-len 100000 --steps 1 --out "$W/x"
# -- prepare: binary files skipped with a count, --include globs
mkdir -p "$W/src/sub"; cp "$W/text.txt" "$W/src/a.txt"; cp "$W/text.txt" "$W/src/sub/b.md"
printf '\x03\xf3\r\n\0\0\0\0compiled' > "$W/src/sub/c.pyc"
err=$("$BIN" prepare --out "$W/d1" --val-fraction 0 "$W/src" 2>&1 >/dev/null)
check "prepare skips the binary file and says so" grep -q "skipped 1 binary file" <<<"$err"
check "prepare: 2 text documents" bash -c "'$BIN' inspect '$W/d1' | grep -q ' 2 documents'"
"$BIN" prepare --out "$W/d2" --val-fraction 0 --include '*.md' --quiet "$W/src" > /dev/null
check "--include '*.md': 1 document" bash -c "'$BIN' inspect '$W/d2' | grep -q ' 1 document,'"
expect_fail 2 "every input file is binary" "$BIN" prepare --out "$W/d3" --quiet "$W/src/sub/c.pyc"
# -- under MPI: a usage error is one line (rank 0), exit 2, no abort banner
if command -v "$MPIEXEC" > /dev/null; then
  rc=0; err=$("$MPIEXEC" --allow-run-as-root --oversubscribe -np 2 "$BIN" train --data "$W/missing.txt" 2>&1 >/dev/null) || rc=$?
  check "mpiexec -np 2, missing data: exit 2 ($rc)" test "$rc" = 2
  check "mpiexec -np 2, missing data: one ringgpt line" test "$(grep -c '^ringgpt:' <<<"$err")" = 1
  check "mpiexec -np 2, missing data: no MPI_ABORT banner" bash -c "! grep -q MPI_ABORT <<<\"\$0\"" "$err"
  echo '{"lr": 0.001}' > "$W/c1.json"; echo '{"lr": 0.002}' > "$W/c2.json"
  C=(train --data "$W/text.txt" --model tiny --seq-len 32 --steps 1 --out "$W/cc")
  rc=0; err=$("$MPIEXEC" --allow-run-as-root --oversubscribe -np 1 "$BIN" "${C[@]}" --config "$W/c1.json" : \
              -np 1 "$BIN" "${C[@]}" --config "$W/c2.json" 2>&1 >/dev/null) || rc=$?
  check "ranks whose config files differ: refused, exit 2 ($rc)" grep -q "rank 1 was started with different flags" <<<"$err"
fi
finish
