#!/usr/bin/env bash
# tests/train/loss_mask_curve.sh — answer-only loss (JSONL prompt/completion) on every layout: the loss is the mean over the
# step's selected targets on all ranks, so dp=2, sp=2 and --grad-accum 2 give one rank's curve (1e-4); a step whose
# batch selects no target is skipped with one line, never NaN.
# Usage: loss_mask_curve.sh RINGGPT MPIEXEC
set -euo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/ring_common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# A copy task as records: a filler prompt of 0..40 letters (so ranks select different numbers of targets),
# 12 letters, "="; the completion repeats the 12 letters.
awk 'BEGIN { srand(7); a = "abcdefghijklmnop";
  for (i = 0; i < 300; i++) { f = ""; n = int(rand() * 41); for (j = 0; j < n; j++) f = f "z";
    b = ""; for (j = 0; j < 12; j++) b = b substr(a, int(rand() * 16) + 1, 1);
    printf "{\"prompt\": \"%s %s=\", \"completion\": \"%s\"}\n", f, b, b } }' > "$W/copy.jsonl"
"$BIN" prepare --quiet --out "$W/ds" "$W/copy.jsonl" > /dev/null
COMMON=(train --data "$W/ds" --model tiny --seq-len 64 --steps 10 --lr 3e-3 --warmup 2 --threads 1 --val-fraction 0)

compare() {
  paste -d' ' <(metric_column "$1" loss) <(metric_column "$2" loss) | awk -v name="$3" '
    { n++; d = $2 - $4; if (d < 0) d = -d; if ($1 != $3) bad = 1; if (d > worst) worst = d }
    END { if (n == 0 || bad || worst > 1e-4) { printf "FAIL %s: masked loss differs from one rank by %.2e over %d steps\n", name, worst, n; exit 1 }
          printf "ok   %s: masked loss within %.2e of one rank over %d steps\n", name, worst, n }'
}
OMP_NUM_THREADS=1 "$BIN" "${COMMON[@]}" --batch 2 --out "$W/ref" > /dev/null
OMP_NUM_THREADS=1 "$BIN" "${COMMON[@]}" --batch 1 --grad-accum 2 --out "$W/accum" > /dev/null
OMP_NUM_THREADS=1 "$BIN" "${COMMON[@]}" --batch 2 --loss-on all --out "$W/all" > /dev/null
status=0
compare "$W/ref/metrics.jsonl" "$W/accum/metrics.jsonl" "grad-accum 2" || status=1
mpirun_np 2 "$BIN" "${COMMON[@]}" --batch 1 --out "$W/dp2" > /dev/null
compare "$W/ref/metrics.jsonl" "$W/dp2/metrics.jsonl" "dp=2" || status=1
mpirun_np 2 "$BIN" "${COMMON[@]}" --batch 2 --sp 2 --out "$W/sp2" > /dev/null
compare "$W/ref/metrics.jsonl" "$W/sp2/metrics.jsonl" "sp=2" || status=1
if compare "$W/ref/metrics.jsonl" "$W/all/metrics.jsonl" "--loss-on all" > /dev/null; then
  echo "FAIL --loss-on all gives the masked curve"; status=1
else echo "ok   --loss-on all differs from the masked loss"; fi

# No selected target: one long prompt per record, windows of 16 tokens inside it.
awk 'BEGIN { for (i = 0; i < 20; i++) { p = ""; for (j = 0; j < 100; j++) p = p "x"; printf "{\"prompt\": \"%s\", \"completion\": \"y\"}\n", p } }' \
  > "$W/long.jsonl"
"$BIN" prepare --quiet --out "$W/long" "$W/long.jsonl" > /dev/null
OMP_NUM_THREADS=1 "$BIN" train --data "$W/long" --model tiny --seq-len 16 --batch 1 --steps 3 --no-shuffle --threads 1 --val-fraction 0 \
  --out "$W/none" > "$W/none.log" 2>&1 || { echo "FAIL: a step without targets ended the run: $(tail -3 "$W/none.log")"; status=1; }
if grep -q "select no target in this step's 1 samples; update skipped" "$W/none.log" && ! grep -qi "nan" "$W/none/metrics.jsonl" "$W/none.log"; then
  echo "ok   a step whose batch selects no target: skipped with one line, no NaN"
else echo "FAIL no-target step: $(cat "$W/none.log")"; status=1; fi
exit $status
