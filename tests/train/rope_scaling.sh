#!/usr/bin/env bash
# tests/train/rope_scaling.sh — train --rope-scaling: a context-extension fine-tune trains under the scaling (its loss is not the
# unscaled run's), records it in config.json and every checkpoint, resumes with the same losses (and refuses another scaling), is
# inherited by --init-from unless changed (what the text leaves out from the source's), the ring (sp=2) equals one rank; bad values exit 2.
set -uo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/ring_common.sh"
make_copy_text "$W/text.txt" 300
FLAGS=(--data "$W/text.txt" --model tiny --batch 2 --warmup 1 --lr 3e-3 --threads 1 --log-every 100)
losses() { metric_column "$1/metrics.jsonl" loss; }
scaling_of() { sed -nE 's/.*"rope-scaling":[[:space:]]*"([^"]*)".*/\1/p' "$1/config.json"; }
step_dir() { printf '%s/step_%08d' "$1" "$2"; }

"$BIN" train "${FLAGS[@]}" --seq-len 64 --steps 3 --out "$W/base" > "$W/base.log" 2>&1 || bad "base run failed: $(tail -2 "$W/base.log")"
check "a run without the flag records none" test "$(scaling_of "$W/base")" = none
check "... and its checkpoint has no rope_scaling (the old format)" test -z "$(grep rope_scaling "$(step_dir "$W/base" 3)/state.json")"

# The fine-tune: twice the context, yarn over the original 64.
EXT=(--seq-len 128 --steps 6 --ckpt-every 2)
"$BIN" train "${FLAGS[@]}" "${EXT[@]}" --init-from "$W/base" --rope-scaling yarn:4:64 --out "$W/ext" > "$W/ext.log" 2>&1 \
  || bad "fine-tune failed: $(tail -2 "$W/ext.log")"
check "the run says the scaling" grep -q "^RoPE scaling: yarn:4:64:beta_fast=32,beta_slow=1 (--rope-scaling)" "$W/ext.log"
check "inspect shows it" grep -q "RoPE scaling yarn:4:64" <("$BIN" inspect "$W/ext")
check "config.json records the whole scaling" test "$(scaling_of "$W/ext")" = "yarn:4:64:beta_fast=32,beta_slow=1"
for k in 2 6; do
  check "step $k's checkpoint records rope_scaling yarn, factor 4, original 64" python3 -c "
import json, sys; s = json.load(open('$(step_dir "$W/ext" $k)/state.json'))['model']['rope_scaling']
sys.exit(s != {'rope_type': 'yarn', 'factor': 4, 'original_max_position_embeddings': 64, 'beta_fast': 32, 'beta_slow': 1})"
done
"$BIN" train "${FLAGS[@]}" "${EXT[@]}" --init-from "$W/base" --ckpt-every -1 --out "$W/unscaled" > /dev/null 2>&1 || bad "unscaled run failed"
check "the scaling changes the losses (step 1 differs from the unscaled fine-tune's)" \
  test "$(losses "$W/ext" | head -1)" != "$(losses "$W/unscaled" | head -1)"

# Resume from step 2 into another directory: the uncut run's losses; another scaling is refused.
"$BIN" train --resume "$(step_dir "$W/ext" 2)" --out "$W/resumed" --threads 1 > "$W/resumed.log" 2>&1 \
  || bad "resume failed: $(tail -2 "$W/resumed.log")"
check "resumed: steps 3..6 have the uncut run's losses" diff <(losses "$W/ext" | tail -n 4) <(losses "$W/resumed")
"$BIN" train --resume "$(step_dir "$W/ext" 2)" --rope-scaling linear:2 --out "$W/other" --threads 1 > "$W/other.log" 2>&1
rc=$?
check "a resume with another --rope-scaling: exit 2 naming model.rope_scaling (got $rc: $(tail -1 "$W/other.log"))" \
  test "$rc" = 2 -a -n "$(grep 'model.rope_scaling is yarn:4:64' "$W/other.log")"

# --init-from inherits the source's scaling; a changed factor keeps what the text leaves out (the original context).
"$BIN" train "${FLAGS[@]}" --seq-len 128 --steps 1 --init-from "$W/ext" --out "$W/inherit" > /dev/null 2>&1 || bad "inherit failed"
check "--init-from a scaled run: the same scaling" test "$(scaling_of "$W/inherit")" = "yarn:4:64:beta_fast=32,beta_slow=1"
"$BIN" train "${FLAGS[@]}" --seq-len 128 --steps 1 --init-from "$W/ext" --rope-scaling llama3:8 --out "$W/change" > "$W/change.log" 2>&1 \
  || bad "change failed: $(tail -1 "$W/change.log")"
check "--rope-scaling llama3:8 on it: the source's original 64 kept" \
  test "$(scaling_of "$W/change")" = "llama3:8:64:low_freq_factor=1,high_freq_factor=4"
"$BIN" train "${FLAGS[@]}" --seq-len 128 --steps 1 --init-from "$W/ext" --rope-scaling none --out "$W/off" > /dev/null 2>&1 || bad "off failed"
check "--rope-scaling none turns it off" test -z "$(grep rope_scaling "$(step_dir "$W/off" 1)/state.json")"

# The ring (sp=2) under every type: each step's loss within 1e-4 of one rank's (dynamic at 128 > 64: its base grows).
for spec in yarn:4:64 llama3:8:64 dynamic:2:64 linear:2; do
  RUN=(--seq-len 128 --steps 3 --ckpt-every -1 --rope-scaling "$spec")
  "$BIN" train "${FLAGS[@]}" "${RUN[@]}" --out "$W/one_$spec" > /dev/null 2>&1 || bad "$spec one rank failed"
  mpirun_np 2 "$BIN" train "${FLAGS[@]}" "${RUN[@]}" --sp 2 --out "$W/ring_$spec" > "$W/ring.log" 2>&1 \
    || bad "$spec ring failed: $(tail -2 "$W/ring.log")"
  check "$spec, sp=2: every step's loss within 1e-4 of one rank's" \
    awk '{ d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-4) bad = 1; n++ } END { exit bad || n != 3 }' \
    <(paste -d' ' <(losses "$W/one_$spec") <(losses "$W/ring_$spec"))
done

# Bad values: one line naming the flag, exit 2.
FLAGS+=(--seq-len 64 --steps 1)
refuses_each "$W/bad" "--rope-scaling yarn:4" "--rope-scaling llama3:0.5:64" "--rope-scaling ntk:2" \
  "--rope-scaling linear:x" "--rope-scaling yarn:4:64:beta=3" "--rope-scaling dynamic:2:0" \
  "--rope-scaling llama3:8:64:low_freq_factor=4,high_freq_factor=1"
finish
