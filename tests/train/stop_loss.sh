#!/usr/bin/env bash
# tests/train/stop_loss.sh — --stop-loss ends a run after the first step whose last --stop-window losses average at most
# the limit: that step (worked out from an uncut run's metrics), the same losses up to it, its checkpoint, one line; on
# one rank and on dp=2 under mpiexec (both ranks end there, exit 0); never met: every step runs; bad values exit 2.
set -uo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/ring_common.sh"
for i in $(seq 300); do printf 'Stop rule line %d: the quick brown fox jumps over the lazy dog %d times.\n' "$i" $((i * 7 % 13)); done > "$W/text.txt"
STEPS=40 WINDOW=5
FLAGS=(--data "$W/text.txt" --model tiny --seq-len 64 --batch 4 --steps $STEPS --warmup 5 --threads 1 --log-every 100
       --stop-window $WINDOW)
losses() { metric_column "$1/metrics.jsonl" loss; }

# limit_for REF: "STEP LIMIT": a step near the middle of REF whose window mean is a new low, and a limit halfway
# between that mean and the lowest one before it (so the rule must end the run at exactly that step).
limit_for() {
  python3 - "$1/metrics.jsonl" $WINDOW <<'PY'
import json, sys
loss = [json.loads(line)["loss"] for line in open(sys.argv[1])]
w = int(sys.argv[2])
mean = {s: sum(loss[s - w:s]) / w for s in range(w, len(loss) + 1)}
lows = [s for s in mean if s > w and mean[s] < min(mean[t] for t in range(w, s))]
s = min(lows, key=lambda s: abs(s - len(loss) // 2))
before = min(mean[t] for t in range(w, s))
assert before - mean[s] > 1e-4 * before, "window means too close to pick a limit"
print(s, (mean[s] + before) / 2)
PY
}

# ruled WHAT REF OUT LOG RC STEP: the run OUT ended after STEP with the rule's line, exit 0, REF's losses up to STEP, a checkpoint.
ruled() {
  local what=$1 ref=$2 out=$3 log=$4 rc=$5 step=$6
  check "$what: exit 0 (got $rc)" test "$rc" = 0
  check "$what: the rule's line names step $step" grep -q "^stop-loss: .* the run ends after step $step of $STEPS\$" "$log"
  check "$what: losses of steps 1..$step identical to the uncut run's, none after" \
    diff <(losses "$ref" | head -n "$step") <(losses "$out")
  check "$what: step_$(printf %08d "$step") saved and named by LATEST" grep -qx "step_$(printf %08d "$step")" "$out/LATEST"
  check "$what: done line counts $step steps" grep -q "^done: $step steps" "$log"
}

# --- one rank ---------------------------------------------------------------------------------------------------
"$BIN" train "${FLAGS[@]}" --out "$W/ref" > "$W/ref.log" 2>&1 || bad "uncut run failed: $(tail -2 "$W/ref.log")"
read -r step limit < <(limit_for "$W/ref")
echo "one rank: expect the end after step $step with --stop-loss $limit"
"$BIN" train "${FLAGS[@]}" --stop-loss "$limit" --out "$W/one" > "$W/one.log" 2>&1
ruled "one rank" "$W/ref" "$W/one" "$W/one.log" $? "$step"
"$BIN" train "${FLAGS[@]}" --stop-loss "$limit" --ckpt-every -1 --out "$W/nockpt" > "$W/nockpt.log" 2>&1
check "--ckpt-every -1: the rule ends the run after step $step and saves nothing" \
  test "$(losses "$W/nockpt" | tail -1 | cut -d' ' -f1)" = "$step" -a ! -e "$W/nockpt/LATEST"
"$BIN" train "${FLAGS[@]}" --stop-loss 1e-9 --out "$W/never" > "$W/never.log" 2>&1
check "a limit never met: all $STEPS steps, the uncut run's losses" diff <(losses "$W/ref") <(losses "$W/never")
check "a limit never met: no stop-loss line" bash -c "! grep -q '^stop-loss' '$W/never.log'"

# --- dp=2 under mpiexec: the loss is all-reduced, so both ranks end after the same step -----------------------------
mpirun_np 2 "$BIN" train "${FLAGS[@]}" --out "$W/ref2" > "$W/ref2.log" 2>&1 || bad "uncut dp=2 run failed: $(tail -2 "$W/ref2.log")"
read -r step2 limit2 < <(limit_for "$W/ref2")
echo "dp=2: expect the end after step $step2 with --stop-loss $limit2"
mpirun_np 2 "$BIN" train "${FLAGS[@]}" --stop-loss "$limit2" --out "$W/two" > "$W/two.log" 2>&1
ruled "dp=2" "$W/ref2" "$W/two" "$W/two.log" $? "$step2"

# --- bad values -----------------------------------------------------------------------------------------------------
refuses_each "$W/bad" "--stop-loss -1" "--stop-loss inf" "--stop-window 0"
finish
