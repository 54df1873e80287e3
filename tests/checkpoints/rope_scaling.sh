#!/usr/bin/env bash
# tests/checkpoints/rope_scaling.sh — HF rope_scaling (llama3, linear, dynamic, yarn; transformers v4 and v5 keys) imported, evaluated beyond
# the original context = the numpy Llama forward (and LlamaForCausalLM where installed), exported back unchanged; bad scalings named.
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
CHECK_PY=$(dirname "$0")/../../scripts/check_hf_export.py
MAKE_HF=$(dirname "$0")/make_hf_rope.py
[[ -n $PYNP ]] || { echo "SKIP: no python3 with numpy: install python3-numpy"; exit 77; }
make_text "$W/text.txt" 300
# The original context is 64 tokens (Llama 3.2's is 8192: the same formulas, a shorter test); eval reads 256.
LLAMA3='{"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}'
EVAL=(--data "$W/text.txt" --seq-len 256 --batch 2 --batches 1 --threads 2)
dump() { "$BIN" eval "$1" "${EVAL[@]}" --dump-logits "$2" > "$2.log" 2>&1 || bad "eval $1 failed: $(tail -1 "$2.log")"; }
same_logits() { "$PYNP" -c "import numpy as np, sys; sys.exit(not np.array_equal(np.load('$1/logits.npy'), np.load('$2/logits.npy')))"; }
differ() {   # the relative logit difference of two dumps is above 1e-2: the scaling changes these positions
  "$PYNP" -c "import numpy as np, sys; a, b = np.load('$1/logits.npy'), np.load('$2/logits.npy'); sys.exit(not np.abs(a - b).max() / np.abs(b).max() > 1e-2)"
}

# Llama 3.2's scaling (factor 32, low/high 1/4): import, eval at 4x the original context, an independent forward.
"$PYNP" "$MAKE_HF" "$W/l3" "$LLAMA3"
"$BIN" import "$W/l3" --out "$W/l3_imp" > /dev/null || bad "import of rope_scaling llama3 failed"
check "the imported checkpoint records rope_scaling llama3" grep -q '"rope_type":.*"llama3"' "$W/l3_imp/step_00000000/state.json"
dump "$W/l3_imp" "$W/d_l3"
check "llama3 factor 32 at 256 tokens (original 64): numpy forward (and LlamaForCausalLM where installed) = ringgpt" \
  "$PYNP" "$CHECK_PY" "$W/l3" "$W/d_l3"
"$PYNP" "$MAKE_HF" "$W/plain" '{}'
dump "$W/plain" "$W/d_plain"
check "the same weights without rope_scaling give other logits (the scaling is applied)" differ "$W/d_l3" "$W/d_plain"
# The same scaling in transformers v5's rope_parameters and v4's older "type" key: the same logits.
"$PYNP" "$MAKE_HF" "$W/l3_v5" "$LLAMA3" --style v5
"$PYNP" "$MAKE_HF" "$W/l3_type" "$LLAMA3" --style v4type
dump "$W/l3_v5" "$W/d_v5"
dump "$W/l3_type" "$W/d_type"
check "rope_parameters (transformers v5) = rope_scaling: the same logits" same_logits "$W/d_l3" "$W/d_v5"
check "rope_scaling with the older \"type\" key: the same logits" same_logits "$W/d_l3" "$W/d_type"

# linear, dynamic (HF: against max_position_embeddings, at the sequence's length) and yarn (with its attention factor).
for spec in 'linear|{"rope_type": "linear", "factor": 4.0}|131072' \
            'dynamic|{"rope_type": "dynamic", "factor": 4.0}|64' \
            'yarn|{"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 64}|131072' \
            'yarn-beta|{"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 64, "beta_fast": 16, "beta_slow": 2, "attention_factor": 1.2}|131072'; do
  IFS='|' read -r name json max_pos <<< "$spec"
  "$PYNP" "$MAKE_HF" "$W/$name" "$json" --max-pos "$max_pos"
  dump "$W/$name" "$W/d_$name"
  check "$name beyond the original context: numpy forward = ringgpt" "$PYNP" "$CHECK_PY" "$W/$name" "$W/d_$name"
  check "$name: other logits than no scaling" differ "$W/d_$name" "$W/d_plain"
done

# Export keeps rope_scaling: the exported config.json's dict = the source's, its logits = ringgpt's, re-import the same.
"$BIN" export "$W/l3_imp" --to hf "$W/l3_out" > /dev/null || bad "export failed"
check "export writes rope_scaling llama3 with every field as imported" "$PYNP" -c "
import json, sys
a = json.load(open('$W/l3/config.json'))['rope_scaling']; b = json.load(open('$W/l3_out/config.json'))['rope_scaling']
sys.exit(a != b)"
check "the export evaluates as the import did (numpy forward of the exported directory)" "$PYNP" "$CHECK_PY" "$W/l3_out" "$W/d_l3"
check "export keeps the dict's number literals (\"factor\": 32.0, not 32)" grep -qE '"factor":[[:space:]]+32\.0,' "$W/l3_out/config.json"
"$BIN" train --init-from "$W/l3_imp" --data "$W/text.txt" --seq-len 64 --rope-scaling none --steps 1 --threads 1 \
  --out "$W/l3_none" > /dev/null 2>&1 && "$BIN" export "$W/l3_none" --to hf "$W/l3_none_hf" > /dev/null
check "a fine-tune with --rope-scaling none exports \"rope_scaling\": null" "$PYNP" -c "
import json, sys; c = json.load(open('$W/l3_none_hf/config.json')); sys.exit(not ('rope_scaling' in c and c['rope_scaling'] is None and '' not in c))"
"$BIN" import "$W/l3_out" --out "$W/l3_again" > /dev/null
check "export -> import keeps model.rope_scaling" diff <(grep -A6 rope_scaling "$W/l3_imp/step_00000000/state.json") \
  <(grep -A6 rope_scaling "$W/l3_again/step_00000000/state.json")
"$BIN" import "$W/dynamic" --out "$W/dyn_imp" > /dev/null && "$BIN" export "$W/dyn_imp" --to hf "$W/dyn_out" > /dev/null
check "dynamic export: max_position_embeddings is the original context (HF scales against it)" "$PYNP" -c "
import json, sys; c = json.load(open('$W/dyn_out/config.json'))
sys.exit(not (c['max_position_embeddings'] == 64 and c['rope_scaling']['rope_type'] == 'dynamic' and c['rope_scaling']['factor'] == 4))"

# Refused with one line naming the field: a type ringgpt does not implement, an unknown key, a bad factor.
bad_cfg() {   # bad_cfg NAME PYTHON-EDIT-OF-c
  mkdir -p "$W/$1"; cp "$W/l3/model.safetensors" "$W/$1/"
  "$PYNP" -c "import json; c = json.load(open('$W/l3/config.json')); $2; json.dump(c, open('$W/$1/config.json', 'w'))"
}
bad_cfg longrope "c['rope_scaling'] = {'rope_type': 'longrope', 'factor': 4.0, 'short_factor': [1], 'long_factor': [1]}"
expect_fail 2 "field rope_scaling has the key \"short_factor\"" "$BIN" import "$W/longrope" --out "$W/x"
bad_cfg longrope2 "c['rope_scaling'] = {'rope_type': 'longrope', 'factor': 4.0}"
expect_fail 2 "field rope_scaling.rope_type is longrope" "$BIN" import "$W/longrope2" --out "$W/x"
bad_cfg typo "c['rope_scaling']['low_freq_factr'] = 1.0"
expect_fail 2 "has the key \"low_freq_factr\"" "$BIN" import "$W/typo" --out "$W/x"
bad_cfg half "c['rope_scaling']['factor'] = 0.5"
expect_fail 2 "field rope_scaling.factor is 0.5" "$BIN" import "$W/half" --out "$W/x"
bad_cfg nolow "del c['rope_scaling']['low_freq_factor']"
expect_fail 2 "rope_type llama3 needs low_freq_factor and high_freq_factor" "$BIN" import "$W/nolow" --out "$W/x"
bad_cfg lowhigh "c['rope_scaling']['high_freq_factor'] = 1.0"
expect_fail 2 "llama3 needs 0 < low_freq_factor < high_freq_factor (got 1 and 1)" "$BIN" import "$W/lowhigh" --out "$W/x"
bad_cfg noorig "c['rope_scaling']['original_max_position_embeddings'] = 0"
expect_fail 2 "needs original_max_position_embeddings" "$BIN" import "$W/noorig" --out "$W/x"
bad_cfg partial "c['rope_scaling']['partial_rotary_factor'] = 0.5"
expect_fail 2 "partial_rotary_factor is 0.5" "$BIN" import "$W/partial" --out "$W/x"
check "failed imports wrote nothing" test ! -e "$W/x"
finish
