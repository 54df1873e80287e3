#!/usr/bin/env bash
# tests/train/rope_ramp.sh — --rope-theta-ramp raises the RoPE base geometrically over the first N steps: each step
# trains under its base (step 1 = a run at that base), each checkpoint records it, a resume from mid-ramp continues
# with the same losses (and refuses a ramp that contradicts the checkpoint), the ring trains under the same bases as
# one rank, --init-from starts at the source's base and inherits no ramp; bad values exit 2.
set -uo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/ring_common.sh"
make_copy_text "$W/text.txt" 300
FLAGS=(--data "$W/text.txt" --model tiny --seq-len 96 --batch 2 --steps 8 --warmup 2 --lr 3e-3 --threads 1
       --log-every 100)
RAMP=(--rope-theta 160000 --rope-theta-ramp 4 --rope-theta-from 10000)   # 20,000, 40,000, 80,000, then 160,000
losses() { metric_column "$1/metrics.jsonl" loss; }
theta_of() { sed -nE 's/.*"rope_theta":[[:space:]]*([-0-9.e+]+).*/\1/p' "$1/state.json"; }
step_dir() { printf '%s/step_%08d' "$1" "$2"; }

"$BIN" train "${FLAGS[@]}" "${RAMP[@]}" --ckpt-every 1 --out "$W/ramp" > "$W/ramp.log" 2>&1 \
  || bad "ramp run failed: $(tail -2 "$W/ramp.log")"
check "the run says the ramp" grep -q "^RoPE base: 10000 at step 0, rising geometrically to 160000 at step 4" "$W/ramp.log"
for k in 1 2 3 4 5 8; do
  want=$(python3 -c "print(10000 * 16 ** (min($k, 4) / 4))")
  got=$(theta_of "$(step_dir "$W/ramp" $k)")
  check "step $k's checkpoint records the base $want (got $got)" \
    python3 -c "import sys; sys.exit(abs($got - $want) > 1e-6 * $want)"
done

# Step 1 trains under the ramp's first base (20,000): its loss is that of a run at 20,000, not of one at 160,000.
for th in 20000 160000; do
  "$BIN" train "${FLAGS[@]}" --rope-theta $th --steps 1 --out "$W/at$th" > /dev/null 2>&1 || bad "run at $th failed"
done
check "step 1's loss is that of a run under the base 20,000" \
  test "$(losses "$W/ramp" | head -1)" = "$(losses "$W/at20000")"
check "... and not that of a run under 160,000 (the base matters at this length)" \
  test "$(losses "$W/ramp" | head -1)" != "$(losses "$W/at160000")"

# A resume from step 2 (base 40,000) into another run directory continues with the uncut run's losses.
"$BIN" train --resume "$(step_dir "$W/ramp" 2)" --out "$W/resumed" --threads 1 > "$W/resumed.log" 2>&1 \
  || bad "resume failed: $(tail -2 "$W/resumed.log")"
check "resumed mid-ramp: steps 3..8 have the uncut run's losses" \
  diff <(losses "$W/ramp" | tail -n 6) <(losses "$W/resumed")
"$BIN" train --resume "$(step_dir "$W/ramp" 2)" --rope-theta-from 5000 --out "$W/other" --threads 1 > "$W/other.log" 2>&1
rc=$?
check "a resume whose ramp gives another base at the saved step: exit 2 naming rope_theta (got $rc: $(tail -1 "$W/other.log"))" \
  test "$rc" = 2 -a -n "$(grep 'rope_theta' "$W/other.log")"

# The ring (sp=2) trains under the same bases: its losses are one rank's within 1e-4.
mpirun_np 2 "$BIN" train "${FLAGS[@]}" "${RAMP[@]}" --sp 2 --ckpt-every -1 --out "$W/ring" > "$W/ring.log" 2>&1 \
  || bad "ring run failed: $(tail -2 "$W/ring.log")"
check "sp=2: every step's loss within 1e-4 of one rank's" \
  awk '{ d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-4) bad = 1; n++ } END { exit bad || n != 8 }' \
  <(paste -d' ' <(losses "$W/ramp") <(losses "$W/ring"))

# --init-from: the ramp starts at the source's base by default, and a derived run inherits no ramp.
"$BIN" train "${FLAGS[@]}" --init-from "$W/ramp" --rope-theta 640000 --rope-theta-ramp 2 --steps 2 --ckpt-every 1 \
  --out "$W/next" > "$W/next.log" 2>&1 || bad "init-from ramp failed: $(tail -2 "$W/next.log")"
check "--init-from: the ramp starts at the source's 160000 (step 1: 320000)" \
  python3 -c "import sys; sys.exit(abs($(theta_of "$(step_dir "$W/next" 1)") - 320000) > 1)"
"$BIN" train "${FLAGS[@]}" --init-from "$W/ramp" --steps 2 --out "$W/plain" > "$W/plain.log" 2>&1 \
  || bad "init-from without a ramp failed: $(tail -2 "$W/plain.log")"
check "--init-from a ramped run: no ramp line, the source's base kept" \
  test -z "$(grep '^RoPE base' "$W/plain.log")" -a "$(theta_of "$(step_dir "$W/plain" 2)")" = 160000
check "--init-from a ramped run: its config.json has no ramp" grep -q '"rope-theta-ramp":[[:space:]]*0,' "$W/plain/config.json"

# Bad values: one line naming the flag, exit 2.
refuses_each "$W/bad" "--rope-theta-ramp -1" "--rope-theta-ramp 9 --rope-theta-from 10000" "--rope-theta-ramp 4" \
  "--rope-theta-ramp 4 --rope-theta-from 1" "--rope-theta-from 10000"
finish
