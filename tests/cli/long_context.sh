#!/usr/bin/env bash
# tests/cli/long_context.sh — scripts/long_context.sh end to end at toy sizes (3 stages, θ rule, SP=2 ring, tables, heatmap, START, bad settings).
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
S=$(cd "$(dirname "$0")/../../scripts" && pwd)
. "$S/deps.sh"   # find_python: the recipe draws its heatmap (scripts/test.sh installs Debian's matplotlib)
find_python || { echo "SKIP: no python3 with numpy and matplotlib (apt-get install python3-matplotlib)"; exit 77; }
# Toy sizes: the plumbing, not the accuracy (the measured run is in README "Long context").
toy=(RINGGPT_BIN="$BIN" LENS="512 1024 2048" STEPS1=4 STEPS2=2 STEPS3=2 BATCH1=2 BATCH2=1 BATCH3=1
     DIM=32 LAYERS=1 HEADS=2 KV_HEADS=2 TRIALS=1 DEPTHS=0:1:1 THREADS=1 SP=2 OUT="$W/lc")
rc=0; env "${toy[@]}" bash "$S/long_context.sh" > "$W/log" 2>&1 || rc=$?
check "the recipe runs to the end (exit $rc; log: $(tail -3 "$W/log" | tr '\n' ' '))" test $rc = 0
# θ rule: × (T / the previous stage's longest document)^2; stage 1's documents end at 256, stage 2's at 944
check "three stages, θ × (1024/256)^2 then × (2048/944)^2 (10000 -> 160000 -> 753071)" \
  grep -qzE "stage 1: T=512, theta 10000,.*stage 2: T=1024, theta 160000,.*stage 3: T=2048, theta 753071," "$W/log"
for k in 1 2 3; do
  check "stage $k: checkpoint, passkey table (CSV and JSON)" test -f "$W/lc/stage$k/LATEST" -a -s "$W/lc/passkey_stage$k.csv" -a -s "$W/lc/passkey_stage$k.json"
done
check "stage 3 evaluated up to 2x its length (4096 tokens)" grep -q "^4096," "$W/lc/passkey_stage3.csv"
check "stages 2-3 ran over the ring (2 ranks)" grep -q "1x2 ranks" "$W/log"
check "timings: every stage and the total" test "$(grep -c "^stage [123] training\|^total:" "$W/lc/timings.txt")" = 4
check "one heatmap across the stages" test -s "$W/lc/passkey_stages.png"
check "the stages train with --doc-mask" grep -q '"doc-mask":.*true' "$W/lc/stage1/config.json" "$W/lc/stage3/config.json"
sum12() { cat "$W"/lc/stage[12]/step_*/model.safetensors "$W"/lc/passkey_stage[12].csv | md5sum; }
kept=$(sum12)
rc=0; env "${toy[@]}" START=3 bash "$S/long_context.sh" > "$W/log3" 2>&1 || rc=$?
check "START=3 reruns stage 3 only (exit $rc)" test $rc = 0 -a "$(grep -c '^== stage' "$W/log3")" = 1
check "START=3 keeps stages 1-2 (weights and tables)" test "$(sum12)" = "$kept"
rc=0; env "${toy[@]}" SEED=2 THETA=20000 THETA_POW=1 OUT="$W/lc2" bash "$S/long_context.sh" > "$W/log2" 2>&1 || rc=$?
check "SEED=2 draws other training documents (exit $rc)" test "$(head -3 "$W/lc/mix_512.jsonl")" != "$(head -3 "$W/lc2/mix_512.jsonl")"
check "SEED=2 trains in another data order" grep -q '"seed":.*1338' "$W/lc2/stage1/config.json"
check "THETA=20000 is stage 1's base, THETA_POW=1 the rule's power (20000 -> 80000 -> 173559)" \
  grep -qzE "stage 1: T=512, theta 20000,.*stage 2: T=1024, theta 80000,.*stage 3: T=2048, theta 173559," "$W/log2"
for bad in 1e6 0 -5; do expect_fail 2 "THETA must be a positive integer" env "${toy[@]}" THETA=$bad bash "$S/long_context.sh"; done
for bad in x -1 1e3; do expect_fail 2 "THETA_POW must be a non-negative number" env "${toy[@]}" THETA_POW=$bad bash "$S/long_context.sh"; done
expect_fail 2 "SEED=7 is the passkey evaluation's seed" env "${toy[@]}" SEED=7 bash "$S/long_context.sh"
for bad in x 08; do expect_fail 2 "SEED must be a non-negative integer" env "${toy[@]}" SEED=$bad bash "$S/long_context.sh"; done
expect_fail 2 "START=2 needs" env "${toy[@]}" OUT="$W/empty" START=2 bash "$S/long_context.sh"
finish
