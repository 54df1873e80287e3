#!/usr/bin/env bash
# tests/checkpoints/hf_export.sh — export to HF Llama: numpy forward logits = `ringgpt eval --dump-logits` (< 1e-4), safetensors readable
# by Python, export -> import -> export lossless, sharded and BF16 imports, bad HF configs and dtypes named.
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
CHECK_PY=$(dirname "$0")/../../scripts/check_hf_export.py
[[ -n $PYNP ]] || { echo "no python3 with numpy: install python3-numpy"; echo "0 passed, 1 failed"; exit 1; }
make_text "$W/text.txt" 200
for tie in untied tied; do
  flags=(); [[ $tie == tied ]] && flags=(--tie-embeddings)
  "$BIN" train --data "$W/text.txt" --model tiny --heads 4 --kv-heads 2 --seq-len 48 --batch 2 --steps 4 --threads 1 \
    --log-every 100 --out "$W/run_$tie" "${flags[@]}" > /dev/null
  "$BIN" export "$W/run_$tie" --to hf "$W/hf_$tie" > /dev/null
  "$BIN" eval "$W/run_$tie" --data "$W/text.txt" --batch 2 --batches 1 --threads 1 --dump-logits "$W/dump_$tie" > /dev/null
  check "$tie (GQA 4/2 heads): numpy Llama forward on the export = ringgpt logits" "$PYNP" "$CHECK_PY" "$W/hf_$tie" "$W/dump_$tie"
  check "$tie: floats as the shortest text that reads back the same (rms_norm_eps 1e-05, rope_theta 10000)" \
    grep -qzE '"rms_norm_eps":.1e-05,.*"rope_theta":.10000,' "$W/hf_$tie/config.json"
  check "$tie: HF config ties embeddings as the model does" grep -q "\"tie_word_embeddings\":.$([[ $tie == tied ]] && echo true || echo false)" "$W/hf_$tie/config.json"
done
check "safetensors written by ringgpt parse in Python (format pt, 8-aligned, contiguous)" "$PYNP" "$CHECK_PY" --parse \
  "$W/hf_untied/model.safetensors" "$W/run_untied/step_00000004/model.safetensors" "$W/run_untied/step_00000004/optim.safetensors"
# export -> import -> export: the same bytes; the imported checkpoint evaluates to the same loss
"$BIN" import "$W/hf_untied" --out "$W/imp" > /dev/null
"$BIN" export "$W/imp" --to hf "$W/hf_again" > /dev/null
check "export -> import -> export is lossless" cmp -s "$W/hf_untied/model.safetensors" "$W/hf_again/model.safetensors"
loss() { "$BIN" eval "$1" --data "$W/text.txt" --seq-len 48 --batch 2 --batches 2 --seed 5 --threads 1 | sed -nE 's/eval: loss ([0-9.]+).*/\1/p'; }
ref=$(loss "$W/run_untied")
check "imported checkpoint has the same eval loss ($ref)" test "$(loss "$W/imp")" = "$ref"
check "an HF directory evaluates directly" test "$(loss "$W/hf_untied")" = "$ref"
# sharded (index.json) and BF16 / F16 copies written by Python
"$PYNP" - "$W/hf_untied" "$W/sharded" "$W/half" "$CHECK_PY" <<'PY'
import importlib.util, json, os, shutil, struct, sys
import numpy as np
spec = importlib.util.spec_from_file_location("chk", sys.argv[4]); chk = importlib.util.module_from_spec(spec); spec.loader.exec_module(chk)
src, sharded, half = sys.argv[1:4]
w, _ = chk.parse_safetensors(os.path.join(src, "model.safetensors"))
def save(path, tensors):  # {name: (dtype, array)}
    header, off, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for k, (dt, a) in tensors.items():
        b = a.tobytes(); header[k] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}; off += len(b); blobs.append(b)
    h = json.dumps(header).encode(); h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
for d in (sharded, half): os.makedirs(d, exist_ok=True); shutil.copy(os.path.join(src, "config.json"), d)
names = sorted(w); parts = [names[: len(names) // 2], names[len(names) // 2:]]
wm = {}
for i, part in enumerate(parts):
    f = f"model-{i + 1:05d}-of-00002.safetensors"; save(os.path.join(sharded, f), {k: ("F32", w[k]) for k in part}); wm.update({k: f for k in part})
json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, open(os.path.join(sharded, "model.safetensors.index.json"), "w"))
def bf16(a): return ((a.astype(np.float32).view(np.uint32) + 0x7FFF + ((a.view(np.uint32) >> 16) & 1)) >> 16).astype(np.uint16)
save(os.path.join(half, "model.safetensors"), {k: (("BF16", bf16(a)) if i % 2 else ("F16", a.astype(np.float16))) for i, (k, a) in enumerate(sorted(w.items()))})
PY
"$BIN" import "$W/sharded" --out "$W/imp_sharded" > /dev/null
check "sharded import (index.json, 2 files) = single-file import" cmp -s "$W/imp/step_00000000/model.safetensors" "$W/imp_sharded/step_00000000/model.safetensors"
"$BIN" import "$W/half" --out "$W/imp_half" > /dev/null
half_loss=$(loss "$W/imp_half")
check "BF16/F16 import evaluates close to F32 ($half_loss vs $ref)" awk -v a="$half_loss" -v b="$ref" 'BEGIN { d = a - b; exit !(d < 0.02 && d > -0.02) }'
# bad HF input
mkdir -p "$W/gpt2"; cp "$W/hf_untied/model.safetensors" "$W/gpt2/"
echo '{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 64}' > "$W/gpt2/config.json"
expect_fail 2 "config.json: field model_type is 'gpt2'" "$BIN" import "$W/gpt2" --out "$W/x"
mkdir -p "$W/bias"; cp "$W/hf_untied/model.safetensors" "$W/bias/"
sed 's/"attention_bias":.false/"attention_bias": true/' "$W/hf_untied/config.json" > "$W/bias/config.json"
expect_fail 2 "field attention_bias is true" "$BIN" import "$W/bias" --out "$W/x"
mkdir -p "$W/nohidden"; cp "$W/hf_untied/model.safetensors" "$W/nohidden/"; grep -v hidden_size "$W/hf_untied/config.json" > "$W/nohidden/config.json"
expect_fail 2 "field hidden_size is missing" "$BIN" import "$W/nohidden" --out "$W/x"
mkdir -p "$W/i32"; cp "$W/hf_untied/config.json" "$W/i32/"
"$PYNP" -c "
import json,struct,sys; h=json.dumps({'model.embed_tokens.weight':{'dtype':'I32','shape':[260,64],'data_offsets':[0,66560]}}).encode()
open(sys.argv[1],'wb').write(struct.pack('<Q',len(h))+h+bytes(66560))" "$W/i32/model.safetensors"
expect_fail 2 "dtype I32 is not supported" "$BIN" import "$W/i32" --out "$W/x"
check "failed imports wrote nothing" test ! -e "$W/x"
finish
