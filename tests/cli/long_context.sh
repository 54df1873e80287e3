#!/usr/bin/env bash
# tests/cli/long_context.sh — scripts/long_context.sh end to end on a toy recipe (3 stages, SP=2 ring, tables, heatmap, START, bad settings),
# and the shipped recipe's configs: accepted by their commands, and the θ rule holds between its stages.
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
S=$ROOT/scripts
. "$S/deps.sh"   # find_python: the recipe draws its heatmap (scripts/test.sh installs Debian's matplotlib)
find_python || { echo "SKIP: no python3 with numpy and matplotlib (apt-get install python3-matplotlib)"; exit 77; }
# The toy recipe: the plumbing, not the accuracy (the measured runs: docs/long_context.md).
toy=(RINGGPT_BIN="$BIN" RECIPE=tests/cli/recipe_tiny THREADS=1 SP=2 OUT="$W/lc")
rc=0; env "${toy[@]}" bash "$S/long_context.sh" > "$W/log" 2>&1 || rc=$?
check "the recipe runs to the end (exit $rc; log: $(tail -3 "$W/log" | tr '\n' ' '))" test $rc = 0
for k in 1 2 3; do
  check "stage $k: checkpoint, passkey table (CSV and JSON)" test -f "$W/lc/stage$k/LATEST" -a -s "$W/lc/passkey_stage$k.csv" -a -s "$W/lc/passkey_stage$k.json"
  check "stage $k trained its config's length" grep -qE "\"seq-len\":\s*$((256 << k))," "$W/lc/stage$k/config.json"
done
check "stage 1 ended on its --stop-loss after its 3-step window, and the log says so" \
  test "$(cat "$W/lc/stage1/LATEST")" = step_00000003 -a -n "$(grep '^stop-loss: .* after step 3 of 6$' "$W/log")"
check "stage 2 started from stage 1's weights" grep -qE "\"init-from\":\s*\"$W/lc/stage1\"" "$W/lc/stage2/config.json"
check "stage 3 evaluated up to 2x its length (4096 tokens)" grep -q "^4096," "$W/lc/passkey_stage3.csv"
for grid in prose distractors; do
  check "stage 3's $grid grid: its own table up to 4096 tokens" grep -q "^4096," "$W/lc/passkey_stage3.$grid.csv"
done
check "the prose grid names its haystack" grep -q '"haystack_files"' "$W/lc/passkey_stage3.prose.json"
check "the distractor grid names its count" grep -qE '"distractors":\s*3' "$W/lc/passkey_stage3.distractors.json"
check "stage 3's data hides needles in the training prose" grep -q '"haystack_frac"' "$W/lc/data3/manifest.json"
check "stage 3's data has documents with distractors" grep -q '"distractor_frac"' "$W/lc/data3/manifest.json"
check "the corpora's checksums are recorded" grep -q "common-licenses" "$W/lc/corpora.sha256"
check "the binary is recorded" grep -q "^ringgpt .*(commit" "$W/lc/machine.txt"
check "the BLAS kernels are recorded" grep -q "^BLAS: .*(kernels: " "$W/lc/machine.txt"
check "the thread count is recorded" grep -q "^threads: 1," "$W/lc/machine.txt"
check "stages 2-3 ran over the ring (2 ranks)" grep -q "1x2 ranks" "$W/log"
check "timings: every stage, every evaluation and the total" \
  test "$(grep -c "^stage [123] training\|^passkey after stage [123]\|^total:" "$W/lc/timings.txt")" = 7
check "one heatmap across the stages" test -s "$W/lc/passkey_stages.png"
check "RULER after the last stage: results over the ring, its heatmap, its time" \
  test -s "$W/lc/ruler/results.json" -a -s "$W/lc/ruler.png" -a -n "$(grep '^ruler after stage 3: ' "$W/lc/timings.txt")"
check "RULER's table: 4 tasks, 2 lengths, from the recipe's ruler.json" python3 -c "
import json; d = json.load(open('$W/lc/ruler/results.json'))
assert d['lengths'] == [1100, 1500] and len(d['tasks']) == 4 and d['samples'] == 2 and d['label'] == 'toy recipe', d['tasks']"
check "the stages train with --doc-mask" grep -q '"doc-mask":.*true' "$W/lc/stage1/config.json" "$W/lc/stage3/config.json"
check "stage 2's data mixes in text records" grep -qE '"text_frac":\s*0.5' "$W/lc/data2/manifest.json"
sum12() { cat "$W"/lc/stage[12]/step_*/model.safetensors "$W"/lc/passkey_stage[12].csv | md5sum; }
kept=$(sum12)
rc=0; env "${toy[@]}" START=3 bash "$S/long_context.sh" > "$W/log3" 2>&1 || rc=$?
check "START=3 reruns stage 3 only (exit $rc)" test $rc = 0 -a "$(grep -c '^== stage' "$W/log3")" = 1
check "START=3 keeps stages 1-2 (weights and tables)" test "$(sum12)" = "$kept"
check "START=3 keeps the earlier timings and adds stage 3's" test "$(grep -c "^stage [123] training" "$W/lc/timings.txt")" = 3
check "START=3 replaces stage 3's evaluation time, once" test "$(grep -c "^passkey after stage [123]:" "$W/lc/timings.txt")" = 3
check "START=3 replaces RULER's time, once" test "$(grep -c "^ruler after stage 3:" "$W/lc/timings.txt")" = 1
rc=0; env "${toy[@]}" SEED=2 OUT="$W/lc2" bash "$S/long_context.sh" > "$W/log2" 2>&1 || rc=$?
check "SEED=2 draws other training documents (exit $rc)" \
  test "$(cat "$W"/lc/data1/*.rgs | md5sum)" != "$(cat "$W"/lc2/data1/*.rgs | md5sum)"
check "SEED=2 trains in another data order" grep -qE '"seed":\s*1338,' "$W/lc2/stage1/config.json"
expect_fail 2 "SEED=7 is the passkey evaluation's seed" env "${toy[@]}" SEED=7 bash "$S/long_context.sh"
for bad in x 08; do expect_fail 2 "SEED must be a non-negative integer" env "${toy[@]}" SEED=$bad bash "$S/long_context.sh"; done
expect_fail 2 "START=2 needs" env "${toy[@]}" OUT="$W/empty" START=2 bash "$S/long_context.sh"
expect_fail 2 "START must be 1..3" env "${toy[@]}" START=4 bash "$S/long_context.sh"
expect_fail 2 "has no stage1.train.json" env "${toy[@]}" RECIPE="$W" bash "$S/long_context.sh"

# The shipped recipe: every stage's config is accepted by its command (a few documents, one step, one trial)...
R=$ROOT/recipes/long_context name=recipes/long_context
stages=$(compgen -G "$R/stage*.train.json" | wc -l)
check "$name has stages" test "$stages" -gt 0
prev=""
for k in $(seq 1 "$stages"); do
  (cd "$ROOT" && "$BIN" prepare --config "$R/stage$k.data.json" --docs 40 --out "$W/rc$k" > /dev/null 2>&1) \
    && ok || bad "$name/stage$k.data.json: prepare --config fails"
  init=(); ((k == 1)) || init=(--init-from "$prev")
  ramp=(); grep -q '"rope-theta-ramp"' "$R/stage$k.train.json" && ramp=(--rope-theta-ramp 1)   # a ramp fits one step
  "$BIN" train --config "$R/stage$k.train.json" --data "$W/rc$k" --steps 1 --batch 1 --threads 1 --val-fraction 0 \
    --out "$W/rt$k" "${init[@]}" "${ramp[@]}" > "$W/rt$k.log" 2>&1 && ok || bad "$name/stage$k.train.json: $(tail -1 "$W/rt$k.log")"
  prev="$W/rt$k"
  for grid in "$R"/stage$k.passkey*.json; do
    "$BIN" passkey "$W/rt$k" --config "$grid" --lengths 512 --trials 1 --threads 1 --out "$W/rp$k" > /dev/null 2>&1 \
      && ok || bad "$name/$(basename "$grid"): passkey --config fails"
  done
done
"$BIN" ruler "$prev" --config "$R/ruler.json" --lengths 1K --tasks niah_single_1 --samples 1 --threads 1 --out "$W/rr" > "$W/rr.log" 2>&1 \
  && ok || bad "$name/ruler.json: ruler --config fails: $(tail -1 "$W/rr.log")"
# ... and the θ rule holds: stage N's RoPE base = stage N-1's × (T_N / the longest document stage N-1 trained on)^2;
# a stage at the previous stage's length or shorter (it extends nothing: a tail) keeps its base, unless it ramps (rope-theta-ramp) to
# the next stage's: the base step taken early, at the short length. Or the base is set ahead: from some stage on,
# every stage trains under the rule's base for the last stage, stage 1 too.
"$PY" - "$R" "$stages" "$ROOT" <<'PYEOF' && ok || bad "$name: the rope-theta values do not follow the θ rule"
import json, os, sys
r, stages, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def cfg(n, kind):   # a data config's "mix" file (the passkey curriculum), where it names one, counts as part of it
    c = json.load(open(f"{r}/stage{n}.{kind}.json"))
    mix = c.get("mix") if kind == "data" else None
    if mix:
        c = {**json.load(open(next(p for p in (os.path.join(root, mix), os.path.join(r, mix), mix) if os.path.exists(p)))), **c}
    return c
rule = [10000]   # the presets' base (model/config.c), stage 1's unless the base is set ahead from the first stage
for n in range(2, stages + 1):
    prev, cur = cfg(n - 1, "train"), cfg(n, "train")
    longest = max(int(x) for x in cfg(n - 1, "data")["doc-len"].split(","))
    extends = cur["seq-len"] > prev["seq-len"]
    rule.append(round(rule[-1] * (cur["seq-len"] / longest) ** 2) if extends else rule[-1])
got = [cfg(n, "train")["rope-theta"] for n in range(1, stages + 1)]
want = [rule[n + 1] if 0 < n < stages - 1 and cfg(n + 1, "train").get("rope-theta-ramp", 0) > 0
        and cfg(n + 1, "train")["seq-len"] == cfg(n, "train")["seq-len"] else rule[n] for n in range(stages)]
ahead = next((k for k in range(stages) if all(g == rule[-1] for g in got[k:])), stages)
assert got[:ahead] == want[:ahead], (got, want)
for n in range(2, stages + 1):
    cur, data = cfg(n, "train"), cfg(n, "data")   # a document with a long key grows by its extra digits, twice (needle and answer)
    grow = 2 * (data.get("key-max", 40) - 5) if data.get("long-frac", 0) > 0 else 0
    assert max(int(x) for x in data["doc-len"].split(",")) <= cur["seq-len"] - grow, n
PYEOF
finish
